// The audit log's use cases: reading it (a tenant key its tenant's events, the admin any tenant's or all) and
// recording the actions that write nothing else (a user token's issuance, a bulk cancel). The repositories of
// management actions record their own events, in the transaction of the change.

import { Injectable } from '@nestjs/common';
import type { AuditEntry } from '@canopy/store';
import { tenantReadBy, type Caller } from '../caller';
import { AuditRepository, type AuditEventView, type AuditFilter } from './audit.repository';

@Injectable()
export class AuditService {
  constructor(private readonly audit: AuditRepository) {}

  /** A page of the events the caller may read, of `tenantId` when the admin names one. */
  list(
    caller: Caller,
    tenantId: string | undefined,
    filter: AuditFilter,
  ): Promise<{ data: AuditEventView[]; nextCursor: string | null }> {
    const readable = tenantReadBy(caller, tenantId);
    return caller.kind === 'admin'
      ? this.audit.listForAdmin(readable ?? undefined, filter)
      : this.audit.listForTenant({ tenantId: readable! }, filter);
  }

  /** Records an action that writes nothing else, in a transaction of its own. */
  record(entry: AuditEntry): Promise<void> {
    return this.audit.record(entry);
  }
}
