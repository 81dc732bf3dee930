// Keeps the planner's statistics of the service's tables current, and on the embedded database reclaims dead rows.
//
// Why: a table that has never been analyzed gives the planner no statistics, and with none, every index whose
// leading column is tenant_id looks as cheap as the primary key for a lookup like `tenant_id = $1 AND id = $2`
// (both estimates clamp to one row; the tie goes to the newest index). A lookup by primary key then walks the
// tenant's runs, or a session's nodes, and PL/pgSQL and the foreign-key checks cache that plan for the connection:
// the cost of a run grows with the tenant's history (seen in the HTTP bench: 68 rows of `runs` read per run on a
// fresh database, 2 once analyzed). An ANALYZE invalidates the cached plans. Postgres's autovacuum analyzes only
// after 50 rows + 10% changed and wakes once a minute; the embedded PGlite has no autovacuum at all (one backend,
// no launcher), so without this its tables are never analyzed nor vacuumed. Tables grow from empty in a
// deployment's first moments, so for its first minute a process reads the counters every second (then at
// intervalMs): on a fresh database the first runs' plans are replaced within about a second, not five.

import type { Database, TableActivity } from './database';

export interface TableMaintenanceOptions {
  /** Also VACUUM tables with many dead rows (the embedded database, which has no autovacuum). */
  vacuum: boolean;
  /** How often the counters are read. */
  intervalMs: number;
  log?: (message: string) => void;
  onError?: (err: unknown) => void;
}

/** For this long after start() the counters are read at least this often (tables growing from empty). */
const STARTUP_MS = 60_000;
const STARTUP_INTERVAL_MS = 1_000;

/** A table is analyzed once this many rows changed since its last ANALYZE, and at least this share of it. */
const ANALYZE_MIN_CHANGES = 10;
const ANALYZE_SHARE = 0.1;
/** The embedded database vacuums a table once this many rows are dead, and at least this share of it. */
const VACUUM_MIN_DEAD = 1_000;
const VACUUM_SHARE = 0.2;

export interface UpkeepDone {
  analyzed: string[];
  vacuumed: string[];
}

/** What a table needs now, from its counters. */
export function upkeepNeeded(t: TableActivity, vacuum: boolean): 'vacuum' | 'analyze' | null {
  if (vacuum && t.deadRows >= Math.max(VACUUM_MIN_DEAD, VACUUM_SHARE * t.liveRows)) return 'vacuum';
  const changed = t.modifiedSinceAnalyze;
  if (changed >= ANALYZE_MIN_CHANGES && changed >= ANALYZE_SHARE * t.liveRows) return 'analyze';
  return null;
}

export class TableMaintenance {
  private timer: NodeJS.Timeout | null = null;
  private stopped = true;
  /** Counts start() calls: a pass that ends after a stop() and a new start() does not schedule a second chain. */
  private generation = 0;
  private running: Promise<UpkeepDone> | null = null;

  constructor(
    private readonly db: Database,
    private readonly options: TableMaintenanceOptions,
  ) {}

  /** Reads the counters and analyzes (or vacuums) the tables that need it; one pass at a time. */
  runOnce(): Promise<UpkeepDone> {
    this.running ??= this.pass().finally(() => (this.running = null));
    return this.running;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const generation = ++this.generation;
    const startupEnds = Date.now() + STARTUP_MS;
    const next = () => {
      if (this.stopped || generation !== this.generation) return;
      const delay =
        Date.now() < startupEnds
          ? Math.min(STARTUP_INTERVAL_MS, this.options.intervalMs)
          : this.options.intervalMs;
      this.timer = setTimeout(() => {
        this.runOnce()
          .catch((err: unknown) => this.options.onError?.(err))
          .finally(next);
      }, delay);
      this.timer.unref();
    };
    next();
  }

  /** Stops the timer and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }

  private async pass(): Promise<UpkeepDone> {
    const done: UpkeepDone = { analyzed: [], vacuumed: [] };
    for (const table of await this.db.tableActivity()) {
      const kind = upkeepNeeded(table, this.options.vacuum);
      if (!kind) continue;
      await this.db.upkeep(kind, table.table);
      (kind === 'vacuum' ? done.vacuumed : done.analyzed).push(table.table);
    }
    if (done.analyzed.length || done.vacuumed.length) {
      this.options.log?.(
        `table upkeep: ${[
          done.analyzed.length ? `analyzed ${done.analyzed.join(', ')}` : '',
          done.vacuumed.length ? `vacuumed ${done.vacuumed.join(', ')}` : '',
        ]
          .filter(Boolean)
          .join('; ')}`,
      );
    }
    return done;
  }
}
