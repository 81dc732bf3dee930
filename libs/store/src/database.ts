// The only door to the database. Every query runs inside a transaction that first declares who it acts for
// (set_config(..., true), scoped to that transaction), and Postgres row-level security lets it see that
// tenant's rows and nothing else. Repositories get a transaction client from here and never hold the
// PrismaClient or the pool itself, so a query without a tenant cannot be written by accident.
//
// Two kinds of transaction share one node-postgres pool:
// - withTenant / withAdmin / withKeyHash: Prisma interactive transactions (the typed client, for code that wants
//   models);
// - withTenantSql / withAdminSql: raw SQL straight over a pooled pg client. A Prisma interactive transaction
//   costs several times the Node CPU of the same statements over pg (a tenant-scoped SELECT 1: ~1 ms against
//   ~0.2 ms here), and the session store only speaks raw SQL, so it takes this road. Opening one costs a single
//   round trip: BEGIN, the transaction's deadlines and its tenant travel together as one simple-protocol query.
//
// And one road with no BEGIN at all, for the session store's hot path: callSql sends ONE statement in autocommit
// (its implicit transaction is the transaction) that declares its tenant itself, the canopy_* SQL functions
// (their source: prisma/functions/). Each socket write costs real CPU (~140 µs on a small VM), and
// BEGIN ... COMMIT around one statement is two more of them.
//
// On the embedded database (pipelineCalls) those single statements share its one connection: each is written at
// once, behind those still waiting for their answers (node-postgres's pipeline mode), rather than each holding the
// connection for its whole round trip through this process's event loop while the database thread idles.
// Transactions still have it to themselves.

import type { Scope } from '@canopy/core';
import { CanopyException, currentTraceCarrier, declaredAudit } from '@canopy/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { Pool, type ClientBase, type PoolClient, type QueryResultRow } from 'pg';
import { PrismaClient, type Prisma } from './generated/prisma/client';
import { ConnectionLanes, type Lane } from './connection-lanes';
import { fastIntArrayTypes } from './int-array';
import { mapDbError, transactionTimeout } from './prisma-errors';

export type Tx = Prisma.TransactionClient;

/** A raw-SQL transaction: parameterised statements ($1, $2 ...), rows back as plain objects. */
export interface SqlTx {
  query<R = Record<string, unknown>>(text: string, params?: unknown[]): Promise<R[]>;
}

/** One table's activity counters (pg_stat_user_tables). */
export interface TableActivity {
  table: string;
  liveRows: number;
  deadRows: number;
  modifiedSinceAnalyze: number;
  /** Whether the planner has statistics for it (an ANALYZE ran, by hand or by autovacuum). */
  analyzed: boolean;
}

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  /** How long a transaction may wait for a connection. */
  txMaxWaitMs: number;
  /** How long a transaction may run (it is rolled back past this). */
  txTimeoutMs: number;
  /**
   * callSql statements share a connection, each sent without waiting for the answers of those before it
   * (node-postgres's pipeline mode; see callShared). For the embedded database, whose one connection is the
   * bottleneck: each statement otherwise held it for a round trip through this process's event loop.
   */
  pipelineCalls?: boolean;
  /**
   * Whether the server bounds each raw-SQL transaction itself (statement_timeout and
   * idle_in_transaction_session_timeout, set per transaction); default true. Not on the embedded database: PGlite
   * runs a statement in one synchronous WebAssembly call, so no timer can interrupt it, and the idle timeout, once
   * it fires there, leaves the database thread spinning forever on the next statement (every later one waits).
   * The transaction deadline is then this process's alone (checked before each statement and before COMMIT).
   */
  serverTimeouts?: boolean;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * How many callSql statements may wait for their answers on the shared connection at once (pipelineCalls): enough
 * to keep the database busy while this process's event loop gets round to its answers, few enough that a request's
 * statement, which takes the next free place before the run engine's, does not queue behind many at the server.
 * HTTP bench, embedded, 100 sessions (one to three runs each; this machine's spread is ~15%): depth 4: 174 runs/s,
 * session create p50 17 ms; 5: 198-214, 20 ms; 8: 187-231, 27-28 ms, resident memory up to 363 MiB; 16: 203, 77 ms
 * (before: 131-140 runs/s, create 4-6 ms, one statement per round trip).
 */
const PIPELINE_DEPTH = 5;

/**
 * The pooled connection callSql statements share (pipelineCalls): each joins while it is open, sends its statement
 * at once and leaves with its answer; the last to leave gives the connection back.
 */
interface SharedLease {
  readonly client: Promise<PoolClient>;
  /** Statements that joined and have not left. */
  users: number;
  /** It holds its connection (until then, joiners wait for it together). */
  active: boolean;
  /** No more joiners: a transaction or Prisma waits for the connection. */
  closed: boolean;
  /** The connection's failure while shared: it is discarded, not given back. */
  broken?: Error;
  onError: (err: Error) => void;
}

/** The distinct statement texts callSql prepares (the hot path has a handful); past this, statements go unnamed. */
const MAX_PREPARED_TEXTS = 64;
/**
 * Serial numbers of this process's pooled connections, across every Database: a prepared statement's name carries
 * its connection's, so two connections never prepare the same name. On Postgres each connection is a session of
 * its own anyway; the embedded PGlite is ONE session behind every connection to it, where a connection opened
 * after another (a pool reconnecting) would otherwise find the name taken.
 */
let connectionSerial = 0;
const SERIAL = Symbol('canopy.connectionSerial');

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export class Database {
  private readonly pool: Pool;
  private readonly prisma: PrismaClient;
  /** BEGIN and the transaction's deadlines, up to the RLS setting that completes the first round trip. */
  private readonly begin: string;
  private ended = false;
  private statementsSent = 0;
  /** The short ids of the texts callSql prepares (statement names are `canopy_<id>_c<connection serial>`). */
  private readonly preparedTexts = new Map<string, number>();
  /** The service's tables as the last tableActivity() read them (upkeep takes only these). */
  private knownTables = new Set<string>();
  /** Checkouts of a pooled connection by the raw-SQL roads, and the time they waited for one (poolStats). */
  private checkouts = 0;
  private checkoutWaitMs = 0;
  /** Who gets the next free connection of the raw-SQL roads when all are busy (connection-lanes.ts). */
  private readonly lanes: ConnectionLanes;
  /** The connection callSql statements are sharing now (pipelineCalls), if any. */
  private lease: SharedLease | null = null;
  /** The places on the shared connection (PIPELINE_DEPTH), request lane first as for connections. */
  private readonly pipelineSlots: ConnectionLanes;
  /** Transactions of the raw-SQL road waiting for a connection: a shared lease stops taking joiners for them. */
  private transactionsWaiting = 0;
  /** Why the database cannot be reached now (setOutage), or null. */
  private outage: string | null = null;

  constructor(private readonly options: DatabaseOptions) {
    // One pool for both roads, so poolMax bounds the connections this process opens (Postgres allows few).
    this.pool = new Pool({
      connectionString: options.url,
      max: options.poolMax,
      // Statements are written as they come, answered in order (node-postgres matches each answer to its query).
      // A client used by one holder at a time (a transaction, Prisma) behaves exactly as without it.
      pipeline: options.pipelineCalls === true,
      connectionTimeoutMillis: options.txMaxWaitMs,
      // A long active path (sessions.path) read on every run's start is parsed by a split, not char by char.
      types: fastIntArrayTypes,
      // Floats print with the shortest exact digits whatever the server's default, so usage sums made in SQL
      // (canopy_usage, canopy_usage_add) equal the same sums in JavaScript to the last bit. pg-pool awaits the
      // hook's promise before it hands the new connection out (a failure drops the connection and fails the
      // checkout); @types/pg declares it returning void.
      onConnect: ((client: ClientBase) => client.query('SET extra_float_digits = 1')) as (
        client: ClientBase,
      ) => void,
    });
    // A pooled connection that dies while idle is dropped by the pool; without a listener it would crash us.
    this.pool.on('error', () => undefined);
    // Every statement sent on any road (Prisma's adapter included) is one query() call on a pooled client: counted
    // for /metrics and the benches (round trips per run).
    this.pool.on('connect', (client) => {
      (client as { [SERIAL]?: number })[SERIAL] = ++connectionSerial;
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        this.statementsSent++;
        return query(...args);
      };
    });
    // pg-pool's own words for it, so it maps to unavailable (503) like the pool's timeout.
    const waitedTooLong = () =>
      new Error('timeout exceeded when trying to connect (waiting for a pooled connection)');
    this.lanes = new ConnectionLanes(options.poolMax, waitedTooLong);
    this.pipelineSlots = new ConnectionLanes(PIPELINE_DEPTH, waitedTooLong);
    this.prisma = new PrismaClient({
      adapter: new PrismaPg(this.pool), // an external pool: Prisma never ends it, disconnect() does
      transactionOptions: { maxWait: options.txMaxWaitMs, timeout: options.txTimeoutMs },
    });
    // The server enforces the deadline on what it sees: one statement running, or the transaction left idle,
    // past txTimeoutMs is cancelled (the idle case also closes the connection). Both settings are LOCAL, gone
    // with the transaction (set_config(..., true) is SET LOCAL). The value is a number we own and check, so it is
    // spliced in as a literal.
    if (!(options.txTimeoutMs >= 1))
      throw new Error(`txTimeoutMs must be at least 1 ms: ${options.txTimeoutMs}`);
    const timeout = String(Math.trunc(options.txTimeoutMs));
    this.begin =
      options.serverTimeouts === false
        ? 'BEGIN; SELECT '
        : `BEGIN; SELECT set_config('statement_timeout', '${timeout}', true), ` +
          `set_config('idle_in_transaction_session_timeout', '${timeout}', true), `;
  }

  /**
   * Declares the database out of reach (`reason`, e.g. the embedded database restarting), or back (null). While
   * out, every road fails at once with 503 unavailable instead of waiting for a connection that cannot come, and
   * the statements already waiting for one fail as their turn comes.
   */
  setOutage(reason: string | null): void {
    this.outage = reason;
  }

  /** Throws 503 unavailable while the database is declared out of reach (setOutage). */
  private assertReachable(): void {
    if (this.outage !== null) throw CanopyException.unavailable(this.outage);
  }

  /** Runs fn in a transaction that sees only the scope's tenant. An id that is no tenant id finds nothing. */
  withTenant<T>(scope: Pick<Scope, 'tenantId'>, fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (!isUuid(scope.tenantId)) return Promise.reject(CanopyException.notFound('tenant'));
    return this.transaction('canopy.tenant_id', scope.tenantId, fn);
  }

  /**
   * Runs fn across every tenant. Only for the operations that have no tenant yet or span tenants by design
   * (admin routes, recovery sweeps); name the reason so a reader can audit each use.
   */
  withAdmin<T>(reason: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (!reason) return Promise.reject(new Error('withAdmin needs a reason'));
    return this.transaction('canopy.admin', 'on', fn);
  }

  /** Runs fn able to read only the API key row with this hash (authentication, before the tenant is known). */
  withKeyHash<T>(keyHash: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.transaction('canopy.key_hash', keyHash, fn);
  }

  /** withTenant for raw SQL over node-postgres: the same isolation, a fraction of the CPU. */
  withTenantSql<T>(scope: Pick<Scope, 'tenantId'>, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    if (!isUuid(scope.tenantId)) return Promise.reject(CanopyException.notFound('tenant'));
    // Validated as a uuid just above, so safe to splice in as a literal.
    return this.sqlTransaction(`set_config('canopy.tenant_id', '${scope.tenantId}', true)`, fn);
  }

  /**
   * withTenantSql that also holds a staged import's token (canopy.import): its transactions see and write the
   * staged session the restrictive policy hides from all others (the staged_import policy).
   */
  withImportSql<T>(scope: Pick<Scope, 'tenantId'>, token: string, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    if (!isUuid(scope.tenantId)) return Promise.reject(CanopyException.notFound('tenant'));
    // Both checked just here (a uuid, a token of ours), so safe to splice in as literals.
    if (!/^[A-Za-z0-9_-]{16,64}$/.test(token)) return Promise.reject(new Error('not an import token'));
    return this.sqlTransaction(
      `set_config('canopy.tenant_id', '${scope.tenantId}', true), set_config('canopy.import', '${token}', true)`,
      fn,
    );
  }

  /** withAdmin for raw SQL over node-postgres. */
  withAdminSql<T>(reason: string, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    if (!reason) return Promise.reject(new Error('withAdminSql needs a reason'));
    return this.sqlTransaction(`set_config('canopy.admin', 'on', true)`, fn);
  }

  /**
   * The transaction deadline (DATABASE_TX_TIMEOUT_MS). The canopy_* functions take it as their p_timeout_ms and
   * bound their lock waits by it: one statement run in autocommit cannot apply a statement timeout to itself.
   */
  get txTimeoutMs(): number {
    return Math.trunc(this.options.txTimeoutMs);
  }

  /**
   * Runs ONE parameterised statement on a pooled connection in autocommit: no BEGIN, no COMMIT, no settings of
   * ours around it, so it costs one round trip. The statement must declare its tenant itself, as the canopy_*
   * functions do (they set canopy.tenant_id, transaction-local: for this statement only); one that does not sees
   * nothing, row-level security being what it is. The scope's tenant id is checked here like withTenantSql's: one
   * that is no uuid finds nothing, before the database is touched. Errors are mapped as on the other roads.
   * `lane` 'run' is for the run engine's statements: callers waiting for an answer go first (connection-lanes.ts).
   * The statement is prepared on each connection the first time it runs there (preparedName).
   */
  async callSql<R = Record<string, unknown>>(
    scope: Pick<Scope, 'tenantId'>,
    text: string,
    params: unknown[],
    lane: Lane = 'request',
  ): Promise<R[]> {
    if (!isUuid(scope.tenantId)) throw CanopyException.notFound('tenant');
    this.assertReachable();
    if (this.options.pipelineCalls) return this.callShared<R>(text, params, lane);
    const client = await this.checkout(lane);
    // As in sqlTransaction: a connection that dies while we hold it is discarded, not returned to the pool.
    let broken: Error | undefined;
    const onError = (err: Error) => (broken ??= err);
    client.on('error', onError);
    try {
      return await this.runPrepared<R>(client, text, params);
    } catch (err) {
      throw mapDbError(err);
    } finally {
      client.removeListener('error', onError);
      this.giveBack(client, broken);
    }
  }

  /** callSql's statement on `client`, prepared there under its name (preparedName). */
  private async runPrepared<R>(client: PoolClient, text: string, params: unknown[]): Promise<R[]> {
    const name = this.preparedName(text, client);
    return (
      await client.query<R & QueryResultRow>(name ? { name, text, values: params } : { text, values: params })
    ).rows;
  }

  /**
   * callSql on a shared connection: takes one of its PIPELINE_DEPTH places (in `lane`), then joins the lease that
   * holds the connection, or opens one (a checkout like any other). Each statement is its own implicit transaction
   * (its own Sync), so one failing does not touch the others, and the server runs them in the order they were
   * written. A lease takes no joiners once a transaction or Prisma waits for the connection: they get it when the
   * lease's statements are answered, and the statements that come meanwhile open the next lease behind them.
   */
  private async callShared<R>(text: string, params: unknown[], lane: Lane): Promise<R[]> {
    const started = performance.now();
    try {
      await this.pipelineSlots.acquire(lane, this.options.txMaxWaitMs);
    } catch (err) {
      throw mapDbError(err);
    }
    if (this.outage !== null) {
      this.pipelineSlots.release();
      this.assertReachable();
    }
    let lease = this.lease;
    // While a lease holds the connection, whoever else waits for one is a transaction or Prisma (the next lease
    // would wait in the lanes behind it).
    if (lease?.active && (this.transactionsWaiting > 0 || this.pool.waitingCount > 0)) lease.closed = true;
    if (!lease || lease.closed) lease = this.openLease(lane);
    lease.users++;
    try {
      const client = await lease.client;
      this.checkouts++;
      this.checkoutWaitMs += performance.now() - started;
      return await this.runPrepared<R>(client, text, params);
    } catch (err) {
      throw mapDbError(err);
    } finally {
      this.leave(lease);
      this.pipelineSlots.release();
    }
  }

  private openLease(lane: Lane): SharedLease {
    const lease: SharedLease = {
      client: this.checkout(lane, false).then((client) => {
        // As in sqlTransaction: a connection that dies while shared is discarded, not returned to the pool.
        client.on('error', lease.onError);
        lease.active = true;
        return client;
      }),
      users: 0,
      active: false,
      closed: false,
      onError: (err) => (lease.broken ??= err),
    };
    // A failed checkout is the error of those that joined (mapped by checkout); later statements open another.
    lease.client.catch(() => {
      lease.closed = true;
      if (this.lease === lease) this.lease = null;
    });
    this.lease = lease;
    return lease;
  }

  /** A statement is answered: the last one out gives the connection back. */
  private leave(lease: SharedLease): void {
    if (--lease.users > 0) return;
    lease.closed = true;
    if (this.lease === lease) this.lease = null;
    void lease.client.then(
      (client) => {
        client.removeListener('error', lease.onError);
        this.giveBack(client, lease.broken);
      },
      () => undefined,
    );
  }

  /**
   * The name callSql's statement is prepared under on this connection: parsed and planned once per connection
   * (node-postgres sends Parse only the first time it sees the name on a connection), where an unnamed statement
   * is parsed and planned again on every call (~0.2-0.5 ms of Postgres per hot-path statement).
   */
  private preparedName(text: string, client: PoolClient): string | undefined {
    const serial = (client as { [SERIAL]?: number })[SERIAL];
    if (serial === undefined) return undefined;
    let id = this.preparedTexts.get(text);
    if (id === undefined) {
      if (this.preparedTexts.size >= MAX_PREPARED_TEXTS) return undefined;
      id = this.preparedTexts.size + 1;
      this.preparedTexts.set(text, id);
    }
    return `canopy_${id}_c${serial}`;
  }

  /**
   * The pool as the raw-SQL roads (the session store, the hot path) see it: checkouts since start, the time they
   * waited for a free connection (all poolMax busy: they queue in their lanes), and the pool's state now, with the
   * lanes' waiters. Prisma's typed client takes its connections from the same pool without passing here (it
   * serves admin routes and key lookups, cached on the request path); while it holds some, checkouts here can
   * also wait in the pool's own first-come queue. With pipelineCalls, each callSql statement counts as a checkout,
   * its wait for a place on the shared connection with it (its lane's waiters too), and `pipelined` is how many
   * statements the shared connection has been sent and not yet answered.
   */
  get poolStats(): {
    checkouts: number;
    waitSeconds: number;
    waiting: number;
    total: number;
    idle: number;
    waitingByLane: { request: number; run: number };
    pipelined: number;
  } {
    const lanes = this.lanes.state;
    const slots = this.pipelineSlots.state;
    const request = lanes.request + slots.request;
    const run = lanes.run + slots.run;
    return {
      checkouts: this.checkouts,
      waitSeconds: this.checkoutWaitMs / 1000,
      waiting: this.pool.waitingCount + request + run,
      total: this.pool.totalCount,
      idle: this.pool.idleCount,
      waitingByLane: { request, run },
      pipelined: this.lease?.active ? this.lease.users : 0,
    };
  }

  /**
   * A pooled connection for the raw-SQL roads, once its lane's turn comes; giveBack returns both. `counted`: a
   * shared lease's checkout is not (its statements count their own waits).
   */
  private async checkout(lane: Lane, counted = true): Promise<PoolClient> {
    const started = performance.now();
    try {
      this.assertReachable();
      await this.lanes.acquire(lane, this.options.txMaxWaitMs);
      try {
        // The outage may have begun while this waited for its turn.
        this.assertReachable();
        return await this.pool.connect();
      } catch (err) {
        this.lanes.release();
        throw err;
      }
    } catch (err) {
      throw mapDbError(err);
    } finally {
      if (counted) {
        this.checkouts++;
        this.checkoutWaitMs += performance.now() - started;
      }
    }
  }

  /** Returns a checked-out client to the pool (discarded if it broke) and its permit to the lanes. */
  private giveBack(client: PoolClient, broken: Error | undefined): void {
    try {
      client.release(broken);
    } finally {
      this.lanes.release();
    }
  }

  /** Statements this process has sent to the database (each one round trip), since it started. */
  get roundTripsSent(): number {
    return this.statementsSent;
  }

  /**
   * Table upkeep, outside any tenant: the activity counters of the service's own tables (pg_stat_user_tables) and
   * ANALYZE / VACUUM of one of them. No tenant data is read: ANALYZE samples rows for the planner inside the
   * server, and the table name is checked against the tables the service owns before it is spliced in.
   */
  async tableActivity(): Promise<TableActivity[]> {
    this.assertReachable();
    try {
      const { rows } = await this.pool.query<{
        table: string;
        live: string;
        dead: string;
        modified: string;
        analyzed: boolean;
      }>(
        `SELECT relname AS table, n_live_tup AS live, n_dead_tup AS dead, n_mod_since_analyze AS modified,
                (last_analyze IS NOT NULL OR last_autoanalyze IS NOT NULL) AS analyzed
           FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname <> '_prisma_migrations'`,
      );
      this.knownTables = new Set(rows.map((r) => r.table));
      return rows.map((r) => ({
        table: r.table,
        liveRows: Number(r.live),
        deadRows: Number(r.dead),
        modifiedSinceAnalyze: Number(r.modified),
        analyzed: r.analyzed,
      }));
    } catch (err) {
      throw mapDbError(err);
    }
  }

  /** ANALYZE or VACUUM (ANALYZE) of one of the service's tables (see tableActivity). */
  async upkeep(kind: 'analyze' | 'vacuum', table: string): Promise<void> {
    // The tables of the last tableActivity() (the pass that asks has just read them), read again only for a name
    // not among them: a read per ANALYZE was one transaction more for each (the HTTP bench counted them).
    if (!this.knownTables.has(table)) await this.tableActivity();
    if (!this.knownTables.has(table)) throw new Error(`upkeep: unknown table "${table}"`);
    const name = `"${table.replaceAll('"', '""')}"`;
    this.assertReachable();
    try {
      await this.pool.query(kind === 'analyze' ? `ANALYZE ${name}` : `VACUUM (ANALYZE) ${name}`);
    } catch (err) {
      throw mapDbError(err);
    }
  }

  /** Resolves when the database answers. */
  async ping(): Promise<void> {
    this.assertReachable();
    try {
      await this.pool.query('SELECT 1');
    } catch (err) {
      throw mapDbError(err);
    }
  }

  async disconnect(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    try {
      await this.prisma.$disconnect();
    } finally {
      await this.pool.end();
    }
  }

  /** Host and port of the database, never its credentials (for logs). */
  describe(): string {
    try {
      const u = new URL(this.options.url);
      return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
    } catch {
      return 'postgres';
    }
  }

  private async transaction<T>(setting: string, value: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    this.assertReachable();
    try {
      return await this.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT set_config(${setting}, ${value}, true)`;
        return fn(tx);
      });
    } catch (err) {
      throw mapDbError(err);
    }
  }

  /**
   * BEGIN + deadlines + `setting` (a set_config call of trusted text) in one round trip, fn's statements, COMMIT;
   * ROLLBACK on any failure. A client whose connection broke, or that could not roll back, leaves the pool.
   */
  private async sqlTransaction<T>(setting: string, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    this.transactionsWaiting++;
    let client: PoolClient;
    try {
      client = await this.checkout('request');
    } finally {
      this.transactionsWaiting--;
    }
    // A connection that dies while we hold it emits 'error' on the client: without a listener that would crash
    // the process. The failing query rejects on its own; remember the error so the client is discarded.
    let broken: Error | undefined;
    const onError = (err: Error) => (broken ??= err);
    client.on('error', onError);
    const deadline = performance.now() + this.options.txTimeoutMs;
    const checkDeadline = () => {
      // The server cancels a slow statement or a long idle gap; this bounds the whole transaction, as Prisma's
      // timeout did, when it is made of many short steps.
      if (performance.now() > deadline) throw transactionTimeout(this.options.txTimeoutMs);
    };
    const tx: SqlTx = {
      query: async <R>(text: string, params?: unknown[]): Promise<R[]> => {
        checkDeadline();
        return (await client.query(text, params)).rows as R[];
      },
    };
    try {
      // The request's actor travels too (audit triggers read it); nothing outside a request.
      // So does the trace context (OpenTelemetry on): a webhook delivery written by the transaction keeps it.
      await client.query(`${this.begin}${setting}${auditSetting()}${traceSetting()}`);
      const result = await fn(tx);
      checkDeadline();
      await client.query('COMMIT');
      return result;
    } catch (err) {
      if (!broken) {
        try {
          await client.query('ROLLBACK');
        } catch (rollbackErr) {
          broken = rollbackErr instanceof Error ? rollbackErr : new Error(String(rollbackErr));
        }
      }
      throw mapDbError(err);
    } finally {
      client.removeListener('error', onError);
      this.giveBack(client, broken);
    }
  }
}

/** A W3C traceparent as the propagator writes it (checked before it is spliced into SQL). */
const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/**
 * The active trace context as a set_config for the transaction (canopy.traceparent, which the webhook outbox keeps),
 * or '' when there is none (OpenTelemetry off, or outside a traced operation).
 */
function traceSetting(): string {
  const carrier = currentTraceCarrier();
  if (!carrier || !TRACEPARENT.test(carrier.traceparent)) return '';
  return `, set_config('canopy.traceparent', '${carrier.traceparent}', true)`;
}

/**
 * The current request's declared caller as a set_config for its transactions (canopy.audit: base64 JSON, so it can
 * be spliced into the first round trip safely), or '' outside requests.
 */
function auditSetting(): string {
  const context = declaredAudit();
  if (!context) return '';
  const encoded = Buffer.from(JSON.stringify(context), 'utf8').toString('base64');
  return `, set_config('canopy.audit', '${encoded}', true)`;
}
