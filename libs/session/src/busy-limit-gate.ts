// When a run's start must count the tenant's busy sessions (MAX_CONCURRENT_RUNS_PER_TENANT).
//
// canopy_start_run counts them in the database, for every process, and answers the count. That count reads one
// row per run in flight of the tenant: at 100 concurrent sessions ~35 of a run's ~75 rows (HTTP bench), growing
// with the tenant's concurrency. A tenant far below its limit does not need it on every start: while its last count
// is younger than maxAgeMs and that count plus the runs this process started since stays under half the limit, a
// start skips the count. Near the limit (from half of it), every start counts, so a limit of 1 or 2 counts always.
// Processes do not see each other's starts between counts: with several api processes, a burst may pass the limit
// by what the others start in that moment (the limit is soft already: concurrent starts may each count the same
// total). Ends are not tracked: a skipped count can only be more cautious than a fresh one.

/** How long a count lets the starts that follow skip counting. */
export const BUSY_COUNT_MAX_AGE_MS = 1_000;
/** Tenants remembered at most; beyond this, stale entries are dropped (and if none is, the oldest). */
const MAX_TENANTS = 10_000;

interface Counted {
  /** Busy sessions of the tenant after the counted start (the others counted, plus the one it claimed). */
  busy: number;
  at: number;
  /** Runs this process started for the tenant since, without counting. */
  since: number;
}

export class BusyLimitGate {
  private readonly tenants = new Map<string, Counted>();

  constructor(
    private readonly limit: number,
    private readonly now: () => number = Date.now,
    private readonly maxAgeMs = BUSY_COUNT_MAX_AGE_MS,
  ) {}

  /** Whether the next start of the tenant must count its busy sessions (pass the limit to startRun). */
  mustCount(tenantId: string): boolean {
    const last = this.tenants.get(tenantId);
    if (!last || this.now() - last.at >= this.maxAgeMs) return true;
    return (last.busy + last.since) * 2 >= this.limit;
  }

  /**
   * After a start: `busy` is the count it made (the tenant's other busy sessions; undefined when it skipped), and
   * `claimed` whether it made the session busy.
   */
  record(tenantId: string, busy: number | undefined, claimed: boolean): void {
    const last = this.tenants.get(tenantId);
    if (busy === undefined) {
      if (last && claimed) last.since += 1;
      return;
    }
    this.tenants.delete(tenantId); // re-inserted last: the map's order is the order of counts
    this.tenants.set(tenantId, { busy: busy + (claimed ? 1 : 0), at: this.now(), since: 0 });
    if (this.tenants.size > MAX_TENANTS) this.prune();
  }

  /** Tenants remembered (for tests). */
  get size(): number {
    return this.tenants.size;
  }

  private prune(): void {
    const now = this.now();
    for (const [tenantId, counted] of this.tenants) {
      if (now - counted.at < this.maxAgeMs) break; // in order of counts: the rest are younger
      this.tenants.delete(tenantId);
    }
    if (this.tenants.size > MAX_TENANTS) {
      const oldest = this.tenants.keys().next();
      if (!oldest.done) this.tenants.delete(oldest.value);
    }
  }
}
