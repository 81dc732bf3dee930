// Run statistics for dashboards, as stored: a tenant key or user reads its tenant's, the admin every tenant's.

import { Injectable } from '@nestjs/common';
import type { Caller } from '../caller';
import { RunStatsRepository, type StoredRunStats } from './run-stats.repository';

@Injectable()
export class RunStatsService {
  constructor(private readonly repository: RunStatsRepository) {}

  /** The tenant whose figures the caller reads; null: every tenant's (the admin). */
  tenantOf(caller: Caller): string | null {
    return caller.kind === 'admin' ? null : caller.tenantId;
  }

  /** The stored figures over the last `minutes` that the caller may read. */
  stats(caller: Caller, minutes: number): Promise<StoredRunStats> {
    return this.repository.stats(this.tenantOf(caller), minutes);
  }
}
