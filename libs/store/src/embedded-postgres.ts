// The embedded database of the zero-configuration runtime: PGlite (real Postgres compiled to WASM, in-process)
// with its data under the data directory, served on a loopback port so Prisma's pg adapter and the migration
// engine talk to it like any Postgres. The service connects as a non-superuser role that owns the schema, so
// row-level security is enforced exactly as on a real server. One process at a time owns a data directory.

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
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { PGlite, type Extension } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { isProcessAlive } from '@canopy/common';

export const EMBEDDED_ROLE = 'canopy';

export interface EmbeddedPostgres {
  /** postgresql:// URL of the loopback server. PGlite is one Postgres session: use a pool of one connection. */
  readonly url: string;
  readonly dataDir: string;
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
    // btree_gin: the session search's index keys on the tenant as well as the words (the migrations create it).
    const db = await PGlite.create({
      dataDir: pgdata,
      username: EMBEDDED_ROLE,
      extensions: { btree_gin: btreeGin },
    });
    // The socket server queues queries and keeps a transaction on the connection that opened it; a few
    // connections absorb a pool reconnecting while the previous connection is still being torn down.
    const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 4 });
    await server.start();
    let stopped = false;
    return {
      url: `postgresql://${EMBEDDED_ROLE}@${server.getServerConn()}/postgres`,
      dataDir: root,
      async stop() {
        if (stopped) return;
        stopped = true;
        try {
          await server.stop();
          await db.close();
        } finally {
          releaseLock();
        }
      },
    };
  } catch (err) {
    releaseLock();
    throw err instanceof EmbeddedPostgresError
      ? err
      : new EmbeddedPostgresError(`could not start the embedded database in ${pgdata}`, { cause: err });
  }
}

/**
 * PGlite's btree_gin, the contrib extension the session search's index needs (the migrations create it). What
 * `@electric-sql/pglite/contrib/btree_gin` exports, built here because this project's module resolution cannot
 * name that subpath: the extension's bundle ships beside PGlite's entry point.
 */
const btreeGin: Extension = {
  name: 'btree_gin',
  setup: () =>
    Promise.resolve({
      bundlePath: pathToFileURL(join(dirname(require.resolve('@electric-sql/pglite')), 'btree_gin.tar.gz')),
    }),
};

/** First start only: create the service's role (no superuser, no RLS bypass) and give it the database. */
async function bootstrapRole(pgdata: string): Promise<void> {
  const marker = join(pgdata, '.canopy-role');
  if (existsSync(marker)) return;
  const db = await PGlite.create({ dataDir: pgdata });
  try {
    const { rows } = await db.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [EMBEDDED_ROLE]);
    if (rows.length === 0) {
      await db.exec(`
        CREATE ROLE ${EMBEDDED_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS;
        ALTER DATABASE postgres OWNER TO ${EMBEDDED_ROLE};
        ALTER SCHEMA public OWNER TO ${EMBEDDED_ROLE};
      `);
    }
  } finally {
    await db.close();
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
