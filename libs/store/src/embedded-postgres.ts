// The embedded database of the zero-configuration runtime: PGlite (real Postgres compiled to WASM, in-process)
// with its data under the data directory, served on a loopback port so Prisma's pg adapter and the migration
// engine talk to it like any Postgres. It runs on a worker thread of its own: the database's work does not wait
// for the service's event loop (nor the other way round), and the two use two cores. The service connects as a non-superuser role that owns the schema, so
// row-level security is enforced exactly as on a real server. One process at a time owns a data directory.
// The thread can be replaced while the process runs (restart(): the supervisor does it when the thread dies or
// stops answering, embedded-supervisor.ts): a new one on the same data directory and the same port, so the pool's
// connection URL stays true.

import {
  closeSync,
  mkdirSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
  existsSync,
} from 'node:fs';
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { isProcessAlive } from '@canopy/common';

export const EMBEDDED_ROLE = 'canopy';

export interface EmbeddedPostgres {
  /** postgresql:// URL of the loopback server. PGlite is one Postgres session: use a pool of one connection. */
  readonly url: string;
  readonly dataDir: string;
  /**
   * Tells `listener` when the database thread ends on its own (it crashed: its port refuses connections from
   * then on), not when stop(), restart() or kill() end it. Answers how to stop listening.
   */
  onThreadExit(listener: (reason: string) => void): () => void;
  /**
   * Ends the database thread, at once (a wedged thread cannot stop itself), and starts a new one on the same data
   * directory and port: PGlite replays its write-ahead log, so every committed transaction is there. Fails, and
   * leaves no thread, when the new one does not serve within `timeoutMs` or the data directory no longer holds a
   * database (PGlite would initialise an empty one in its place). Restarts and stop() take turns.
   */
  restart(options?: { timeoutMs?: number }): Promise<void>;
  /** Ends the database thread at once, as a crash would (onThreadExit's listeners are told): for tests. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

export class EmbeddedPostgresError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'EmbeddedPostgresError';
  }
}

export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const root = resolve(dataDir);
  const pgdata = join(root, 'pgdata');
  mkdirSync(pgdata, { recursive: true, mode: 0o700 });
  const releaseLock = acquireLock(join(root, 'embedded.lock'));
  try {
    await bootstrapRole(pgdata);
    let server: ServerThread | null = await startServerThread(pgdata, 0);
    // Every later thread listens where the first one did: the URL handed out stays true.
    const port = Number(server.conn.slice(server.conn.lastIndexOf(':') + 1));
    const exitListeners = new Set<(reason: string) => void>();
    const watch = (thread: ServerThread) =>
      thread.exited.then((reason) => {
        // Only a thread that is still the current one and ended on its own is news.
        if (server !== thread) return;
        server = null;
        for (const listener of exitListeners) listener(reason);
      });
    void watch(server);
    let stopped = false;
    // restart(), kill() and stop() one at a time: each finds the thread the previous one left.
    let turn: Promise<unknown> = Promise.resolve();
    const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
      const next = turn.then(fn, fn);
      turn = next.catch(() => undefined);
      return next;
    };
    const end = async () => {
      const thread = server;
      server = null;
      await thread?.terminate();
    };
    return {
      url: `postgresql://${EMBEDDED_ROLE}@${server.conn}/postgres`,
      dataDir: root,
      onThreadExit(listener) {
        exitListeners.add(listener);
        return () => exitListeners.delete(listener);
      },
      restart: (options = {}) =>
        exclusive(async () => {
          if (stopped) throw new EmbeddedPostgresError('the embedded database is stopped');
          await end();
          if (!existsSync(join(pgdata, 'PG_VERSION'))) {
            throw new EmbeddedPostgresError(
              `${pgdata} holds no database any more (PG_VERSION is missing): not starting an empty one in its place`,
            );
          }
          const thread = await startServerThread(pgdata, port, options.timeoutMs);
          if (stopped) {
            await thread.terminate();
            throw new EmbeddedPostgresError('the embedded database is stopped');
          }
          server = thread;
          void watch(thread);
        }),
      kill: () => exclusive(async () => server?.terminate()),
      stop: () =>
        exclusive(async () => {
          if (stopped) return;
          stopped = true;
          const thread = server;
          server = null;
          try {
            await thread?.stop();
          } finally {
            releaseLock();
          }
        }),
    };
  } catch (err) {
    releaseLock();
    throw err instanceof EmbeddedPostgresError
      ? err
      : new EmbeddedPostgresError(`could not start the embedded database in ${pgdata}`, { cause: err });
  }
}

/**
 * The server thread: PGlite with the data directory, served on a loopback port by pglite-socket. The socket
 * server queues queries and keeps a transaction on the connection that opened it; a few connections absorb a pool
 * reconnecting while the previous connection is still being torn down. btree_gin is the contrib extension the
 * session search's index needs (the migrations create it): what `@electric-sql/pglite/contrib/btree_gin` exports,
 * built here because its bundle ships beside PGlite's entry point. The thread runs without Node's source maps
 * (were the service started with --enable-source-maps, it would reach the thread): Node parses the map of each
 * module it loads, PGlite's among them, and a trace inside PGlite's bundle is read rarely enough to do without;
 * the thread's heap at the HTTP bench's peak (100 sessions) went from 41-43 to 27 MiB.
 */
const SERVER_THREAD = `
  process.setSourceMapsEnabled(false);
  const { parentPort, workerData } = require('node:worker_threads');
  const { pathToFileURL } = require('node:url');
  const { PGlite } = require(workerData.pglite);
  const { PGLiteSocketServer } = require(workerData.socket);
  (async () => {
    const btreeGin = {
      name: 'btree_gin',
      setup: () => Promise.resolve({ bundlePath: pathToFileURL(workerData.btreeGin) }),
    };
    const db = await PGlite.create({
      dataDir: workerData.pgdata,
      username: workerData.role,
      extensions: { btree_gin: btreeGin },
      postgresqlconf: workerData.settings,
    });
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: workerData.port, maxConnections: 4 });
    await server.start();
    // One write per packet: the socket server hands each protocol message of a packet to PGlite on its own and
    // writes each answer as it comes (a query's Parse, Bind, Describe, Execute and Sync: five writes, a system
    // call each, 19% of this thread's time at 100 sessions in the HTTP bench). A socket's writes are corked from
    // its first write until the end of the turn of the event loop, which PGlite's answers to one packet never
    // leave (they are synchronous WebAssembly calls chained by promises), then sent as one. Nagle's delay is off:
    // what is written is a whole answer.
    if (!server.server || typeof server.server.on !== 'function') {
      throw new Error('pglite-socket no longer exposes its net.Server (server.server): update the write batching');
    }
    server.server.on('connection', (socket) => {
      socket.setNoDelay(true);
      const write = socket.write;
      let corked = false;
      const flush = () => {
        corked = false;
        socket.uncork();
      };
      socket.write = function (...args) {
        if (!corked) {
          corked = true;
          socket.cork();
          setImmediate(flush);
        }
        return write.apply(socket, args);
      };
    });
    parentPort.on('message', (message) => {
      if (message !== 'stop') return;
      (async () => {
        await server.stop();
        await db.close();
      })().then(
        () => parentPort.postMessage({ type: 'stopped' }),
        (err) => parentPort.postMessage({ type: 'stopped', error: String((err && err.stack) || err) }),
      );
    });
    parentPort.postMessage({ type: 'ready', conn: server.getServerConn() });
  })().catch((err) => parentPort.postMessage({ type: 'failed', error: String((err && err.stack) || err) }));
`;

type ServerMessage =
  { type: 'ready'; conn: string } | { type: 'failed'; error: string } | { type: 'stopped'; error?: string };

/** How long stop() waits for the thread to close PGlite before ending it. */
const STOP_TIMEOUT_MS = 10_000;

/** A running server thread. */
interface ServerThread {
  /** host:port it serves on. */
  readonly conn: string;
  /** Resolves, with what happened, when the thread ends (whatever ends it). */
  readonly exited: Promise<string>;
  /** Closes the server and PGlite, then ends the thread. */
  stop(): Promise<void>;
  /** Ends the thread at once, wherever it is (a thread stuck in a WebAssembly loop included). */
  terminate(): Promise<void>;
}

/**
 * Starts the server thread on `port` (0: any free one); resolves once it serves. Past `timeoutMs` without serving,
 * the thread is ended and the start fails.
 */
async function startServerThread(pgdata: string, port: number, timeoutMs?: number): Promise<ServerThread> {
  const pglite = require.resolve('@electric-sql/pglite');
  const worker = new Worker(SERVER_THREAD, {
    eval: true,
    // The thread's JavaScript holds little (the database lives in PGlite's WebAssembly memory): a small young
    // generation keeps its heap from growing with the query traffic passing through it.
    resourceLimits: { maxYoungGenerationSizeMb: 4 },
    workerData: {
      pglite,
      socket: require.resolve('@electric-sql/pglite-socket'),
      btreeGin: join(dirname(pglite), 'btree_gin.tar.gz'),
      pgdata,
      port,
      role: EMBEDDED_ROLE,
      settings: EMBEDDED_SETTINGS,
    },
  });
  let lastError: string | null = null;
  // Past the start, a failing thread shows as refused connections (answered 503) and as `exited`, not as a crash
  // of the service.
  worker.on('error', (err) => (lastError = String(err.stack ?? err)));
  const exited = new Promise<string>((resolveExit) =>
    worker.once('exit', (code) =>
      resolveExit(`the thread exited (code ${code})${lastError ? `: ${lastError.slice(0, 500)}` : ''}`),
    ),
  );
  const next = () =>
    new Promise<ServerMessage>((resolveMessage, reject) => {
      const onMessage = (m: ServerMessage) => {
        cleanup();
        resolveMessage(m);
      };
      const onExit = (code: number) => {
        cleanup();
        reject(new EmbeddedPostgresError(`the embedded database thread exited (code ${code})`));
      };
      const cleanup = () => {
        worker.off('message', onMessage);
        worker.off('exit', onExit);
      };
      worker.on('message', onMessage);
      worker.on('exit', onExit);
    });
  let timer: NodeJS.Timeout | undefined;
  const first = await Promise.race([
    next(),
    ...(timeoutMs !== undefined
      ? [
          new Promise<never>((_, reject) => {
            timer = setTimeout(
              () =>
                reject(
                  new EmbeddedPostgresError(`the embedded database did not start within ${timeoutMs} ms`),
                ),
              timeoutMs,
            );
          }),
        ]
      : []),
  ])
    .catch(async (err: unknown) => {
      await worker.terminate();
      throw err;
    })
    .finally(() => clearTimeout(timer));
  if (first.type !== 'ready') {
    await worker.terminate();
    throw new EmbeddedPostgresError(
      `the embedded database did not start: ${'error' in first ? first.error : ''}`,
    );
  }
  const terminate = async () => {
    await worker.terminate();
    await exited;
  };
  return {
    conn: first.conn,
    exited,
    terminate,
    async stop() {
      // A thread that does not answer (wedged, or gone) is ended after STOP_TIMEOUT_MS all the same.
      const stopped = next().catch(() => null);
      worker.postMessage('stop');
      let timer: NodeJS.Timeout | undefined;
      const m = await Promise.race([
        stopped,
        exited.then(() => null),
        new Promise<null>((r) => (timer = setTimeout(() => r(null), STOP_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
      await terminate();
      if (m?.type === 'stopped' && m.error) {
        throw new EmbeddedPostgresError(`stopping the embedded database failed: ${m.error}`);
      }
    },
  };
}

/**
 * Postgres settings of the embedded database. Its shared buffers live in the WebAssembly heap, which never
 * shrinks once grown: Postgres's default of 128 MB cost as much resident memory, where 16 MB hold the working set
 * of a single-process deployment (its files are read through the OS's page cache anyway). Measured on a fresh
 * data directory: 342 -> 207 MiB resident at start, 379 -> 231 MiB after a bulk load.
 */
const EMBEDDED_SETTINGS = ['shared_buffers=16MB', 'temp_buffers=2MB', 'maintenance_work_mem=16MB'];

/**
 * First start only: initdb, then create the service's role (no superuser, no RLS bypass) and give it the
 * database. Done in a child process: initdb grows a WebAssembly heap of several hundred MB, which a process keeps
 * for its whole life once grown.
 */
async function bootstrapRole(pgdata: string): Promise<void> {
  const marker = join(pgdata, '.canopy-role');
  if (existsSync(marker)) return;
  const script = `
    const { PGlite } = require(process.argv[1]);
    (async () => {
      const db = await PGlite.create({ dataDir: process.argv[2] });
      try {
        const { rows } = await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [process.argv[3]]);
        if (rows.length === 0) {
          await db.exec(
            'CREATE ROLE ' + process.argv[3] + ' LOGIN NOSUPERUSER NOBYPASSRLS; ' +
            'ALTER DATABASE postgres OWNER TO ' + process.argv[3] + '; ' +
            'ALTER SCHEMA public OWNER TO ' + process.argv[3] + ';');
        }
      } finally {
        await db.close();
      }
    })().catch((err) => { process.stderr.write(String(err && err.stack || err)); process.exit(1); });`;
  const output: string[] = [];
  const code = await new Promise<number | null>((resolveExit, reject) => {
    const child = spawn(
      process.execPath,
      ['-e', script, require.resolve('@electric-sql/pglite'), pgdata, EMBEDDED_ROLE],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child.stderr.on('data', (d: Buffer) => output.push(d.toString()));
    child.on('error', reject);
    child.on('exit', resolveExit);
  });
  if (code !== 0) {
    throw new EmbeddedPostgresError(
      `initialising the embedded database failed: ${output.join('').slice(-2000)}`,
    );
  }
  writeFileSync(marker, `${EMBEDDED_ROLE}\n`);
}

/** A pid lock file: a second process on the same data directory would corrupt it. */
function acquireLock(path: string): () => void {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number.parseInt(readFileSync(path, 'utf8'), 10);
      // A live holder, this very process included (an instance not stopped yet), keeps the directory.
      if (Number.isInteger(holder) && isProcessAlive(holder)) {
        throw new EmbeddedPostgresError(
          `the embedded database in ${path.replace(/[/\\]embedded\.lock$/, '')} is in use by process ${holder}; ` +
            'stop it, use another CANOPY_DATA_DIR, or set DATABASE_URL',
        );
      }
      rmSync(path, { force: true }); // stale lock of a dead process
    }
  }
  throw new EmbeddedPostgresError(`could not lock ${path}`);
}
