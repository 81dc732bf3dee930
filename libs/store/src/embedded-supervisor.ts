// Keeps the embedded database alive. A probe asks the database thread `SELECT 1` on a connection of its own every
// second or so; when the thread exits, or no probe has been answered for the liveness bound (the thread is wedged,
// or its socket server no longer serves), the database is declared down: every request that needs it answers 503
// at once (Database.setOutage), the thread is ended and a new one started on the same data directory and port
// (PGlite replays its write-ahead log: what was committed is there), again and again until one serves. Then the
// pool reconnects on its own and those that asked to be told (the run recovery) are. A database not back within
// the restart bound makes the process unhealthy (/healthz 503), so whatever supervises the process restarts it.

import { Client } from 'pg';
import type { Database } from './database';
import type { EmbeddedPostgres } from './embedded-postgres';

/** up: serving; restarting: down, a new thread on its way; failed: down past the restart bound (still retried). */
export type EmbeddedDatabaseState = 'up' | 'restarting' | 'failed' | 'stopped';

export interface EmbeddedSupervisorOptions {
  /** No probe answered for this long: the database is declared unresponsive and restarted. */
  livenessMs: number;
  /** Not serving again this long after it went down: the process is unhealthy (the restarts go on). */
  recoveryMs: number;
  /** How often the probe asks (default: a second, or a quarter of livenessMs when that is shorter). */
  probeIntervalMs?: number;
  log: {
    info(message: string): void;
    warn(message: string): void;
    error(message: string): void;
  };
}

/** The wait before restart attempt n + 1 (n from 1): 0.25 s doubling to 5 s. */
function backoffMs(attempt: number): number {
  return Math.min(5_000, 250 * 2 ** (attempt - 1));
}

/**
 * How long one attempt may take to serve: a restart replays the log and loads PGlite's WebAssembly (seconds on a
 * busy machine), so never less than 30 s, whatever the restart bound.
 */
const MIN_ATTEMPT_MS = 30_000;

export class EmbeddedDatabaseSupervisor {
  private current: EmbeddedDatabaseState = 'up';
  private restartCount = 0;
  private lastAnswerAt = Date.now();
  /** Ticks in a row that found no answer within livenessMs. */
  private silentTicks = 0;
  private probe: Client | null = null;
  private probing = false;
  private timer: NodeJS.Timeout | null = null;
  private failTimer: NodeJS.Timeout | null = null;
  private recovering: Promise<void> | null = null;
  private stopExitWatch: (() => void) | null = null;
  private readonly restoredListeners = new Set<() => void>();
  private readonly probeIntervalMs: number;

  constructor(
    /** The database thread (its kill() is how tests crash it). */
    readonly embedded: EmbeddedPostgres,
    private readonly database: Database,
    private readonly options: EmbeddedSupervisorOptions,
  ) {
    this.probeIntervalMs =
      options.probeIntervalMs ?? Math.max(50, Math.min(1_000, Math.floor(options.livenessMs / 4)));
  }

  get state(): EmbeddedDatabaseState {
    return this.current;
  }

  /** Restarts that brought the database back, since the process started. */
  get restarts(): number {
    return this.restartCount;
  }

  /** False once the database has been down longer than the restart bound (the process should be restarted). */
  get healthy(): boolean {
    return this.current !== 'failed';
  }

  /** Tells `listener` each time the database serves again after a restart. Answers how to stop listening. */
  onRestored(listener: () => void): () => void {
    this.restoredListeners.add(listener);
    return () => this.restoredListeners.delete(listener);
  }

  start(): void {
    if (this.timer || this.current === 'stopped') return;
    this.lastAnswerAt = Date.now();
    this.stopExitWatch = this.embedded.onThreadExit((reason) => this.declareDown(reason));
    this.schedule();
  }

  async stop(): Promise<void> {
    this.current = 'stopped';
    this.stopExitWatch?.();
    if (this.timer) clearTimeout(this.timer);
    if (this.failTimer) clearTimeout(this.failTimer);
    this.timer = null;
    this.failTimer = null;
    this.closeProbe();
    // A restart under way ends with the stop (embedded.stop() takes its turn after it).
    await this.recovering?.catch(() => undefined);
  }

  private schedule(): void {
    if (this.current === 'stopped') return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.tick();
    }, this.probeIntervalMs);
    this.timer.unref();
  }

  /**
   * One probe, unless the last is still waiting; and the liveness check. Silence must be seen by two ticks in a
   * row: after this process's own event loop was held up (a long synchronous task), the first tick to run comes
   * before the answers that arrived meanwhile are read, and would take the database for silent.
   */
  private tick(): void {
    if (this.current === 'up') {
      const silentMs = Date.now() - this.lastAnswerAt;
      this.silentTicks = silentMs > this.options.livenessMs ? this.silentTicks + 1 : 0;
      if (this.silentTicks >= 2) {
        this.declareDown(`did not answer for ${silentMs} ms`);
      } else if (!this.probing) {
        this.probing = true;
        // Not awaited: a probe that never returns is what the silence above measures.
        void this.ask().finally(() => (this.probing = false));
      }
    }
    this.schedule();
  }

  private async ask(): Promise<void> {
    try {
      this.probe ??= await this.connect();
      await this.probe.query('SELECT 1');
      if (this.current === 'up') this.lastAnswerAt = Date.now();
    } catch {
      // Refused or dropped: the next tick connects again; the silence decides.
      this.closeProbe();
    }
  }

  /** A connection of the probe's own; `queryTimeoutMs` bounds each query on it (the silence bounds the probe's). */
  private async connect(queryTimeoutMs?: number): Promise<Client> {
    const client = new Client({
      connectionString: this.embedded.url,
      connectionTimeoutMillis: this.options.livenessMs,
      ...(queryTimeoutMs !== undefined ? { query_timeout: queryTimeoutMs } : {}),
    });
    client.on('error', () => undefined); // a dropped connection fails its query; the next tick reconnects
    try {
      await client.connect();
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    return client;
  }

  private closeProbe(): void {
    const probe = this.probe;
    this.probe = null;
    // end() waits for the server's goodbye, which a wedged thread never sends: not awaited (the thread's end
    // closes the socket).
    if (probe) void probe.end().catch(() => undefined);
  }

  /** The database is down: requests fail fast from now on, and a restart begins. */
  private declareDown(reason: string): void {
    if (this.current !== 'up') return;
    this.current = 'restarting';
    const since = Date.now();
    this.database.setOutage('the embedded database is restarting; retry shortly');
    this.options.log.warn(`the embedded database ${reason}: restarting it`);
    this.failTimer = setTimeout(() => {
      this.failTimer = null;
      if (this.current !== 'restarting') return;
      this.current = 'failed';
      this.options.log.error(
        `the embedded database is not back ${this.options.recoveryMs} ms after it went down: the process ` +
          'reports itself unhealthy (/healthz 503) so that it is restarted; restarts go on meanwhile',
      );
    }, this.options.recoveryMs);
    this.failTimer.unref();
    this.closeProbe();
    this.recovering = this.recover(since).finally(() => (this.recovering = null));
  }

  private async recover(since: number): Promise<void> {
    const timeoutMs = Math.max(MIN_ATTEMPT_MS, this.options.recoveryMs);
    for (let attempt = 1; ; attempt++) {
      if (this.isStopped()) return;
      try {
        await this.embedded.restart({ timeoutMs });
        // Serving is not enough: it must answer (as the pool's role) before requests are let through.
        const probe = await this.connect(this.options.livenessMs);
        try {
          await probe.query('SELECT 1');
        } finally {
          void probe.end().catch(() => undefined);
        }
        break;
      } catch (err) {
        if (this.isStopped()) return;
        const message = err instanceof Error ? err.message : String(err);
        this.options.log.warn(`restarting the embedded database failed (attempt ${attempt}): ${message}`);
        await new Promise((r) => setTimeout(r, backoffMs(attempt)));
      }
    }
    if (this.isStopped()) return;
    if (this.failTimer) clearTimeout(this.failTimer);
    this.failTimer = null;
    this.restartCount++;
    this.lastAnswerAt = Date.now();
    this.silentTicks = 0;
    this.current = 'up';
    this.database.setOutage(null);
    this.options.log.info(
      `the embedded database serves again, ${Date.now() - since} ms after it went down (restart ${this.restartCount})`,
    );
    for (const listener of this.restoredListeners) {
      try {
        listener();
      } catch {
        // a listener's failure is its own
      }
    }
  }

  /** Re-read through a method: `current` changes while recover() awaits. */
  private isStopped(): boolean {
    return this.current === 'stopped';
  }
}
