// Answers of the API that the service builds and the SDK reads, shared so the two cannot drift: a live session
// as the registry knows it, and the run statistics of dashboards.

import type { SessionStatus } from '../events';

/** A live session across the deployment: the presences of every instance merged. */
export interface LiveEntry {
  tenantId: string;
  id: string;
  title: string | null;
  status: SessionStatus;
  userId: string | null;
  controllers: number;
  observers: number;
  /** ISO time the session became live (earliest presence). */
  since: string;
  where: { api: string[]; worker: string | null };
}

export interface MinuteStats {
  /** The minute's start (ISO 8601). */
  minute: string;
  started: number;
  finished: number;
  failed: number;
}

export interface TenantUsage {
  tenantId: string;
  tenantName: string;
  /** Runs finished in the window. */
  runs: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  totalCost: number;
}

export interface RunStats {
  since: string;
  until: string;
  /** Minutes with any run started or finished, oldest first. */
  perMinute: MinuteStats[];
  /** Tenants with runs finished in the window, most tokens first (at most 100). */
  usageByTenant: TenantUsage[];
}
