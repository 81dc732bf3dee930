// A Postgres cluster of a test's own (initdb + pg_ctl from the machine's Postgres binaries, a data directory under
// /tmp, a free port), so a test can restart it, pause it or stop it without touching the Postgres every other test
// shares. Its databases are migrated like the shared template and owned by the same non-superuser test role, so
// row-level security holds there too. stop() ends the cluster and deletes its directory.

import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './cluster';
// Relative, not @canopy/store, as in test-postgres.ts.
import { applyMigrations } from '../../store/src/migrator';
import { TEST_ROLE, type TestDatabase } from './test-postgres';

const run = promisify(execFile);
const MIGRATIONS_DIR = resolve(__dirname, '../../../prisma/migrations');

/** The newest Postgres on the machine (Debian's layout), or CANOPY_TEST_PG_BIN. */
function binDir(): string {
  if (process.env.CANOPY_TEST_PG_BIN) return process.env.CANOPY_TEST_PG_BIN;
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length === 0) throw new Error(`no Postgres binaries under ${root} (set CANOPY_TEST_PG_BIN)`);
  return join(root, versions[0]!, 'bin');
}

export class PrivatePostgres {
  private readonly data: string;

  private constructor(
    readonly port: number,
    /** Holds the data directory, the server's socket and its log. */
    private readonly dir: string,
    private readonly bin: string,
    /** initdb and postgres refuse to run as root: as root they run as the `postgres` user. */
    private readonly asUser: string | null,
  ) {
    this.data = join(dir, 'data');
  }

  static async start(): Promise<PrivatePostgres> {
    const port = await freePort();
    const dir = mkdtempSync('/tmp/canopy-pg-');
    const asUser = process.getuid?.() === 0 ? 'postgres' : null;
    if (asUser) {
      const [uid, gid] = await Promise.all(
        ['-u', '-g'].map(async (flag) => Number((await run('id', [flag, asUser])).stdout.trim())),
      );
      chownSync(dir, uid!, gid!);
    }
    const pg = new PrivatePostgres(port, dir, binDir(), asUser);
    try {
      await pg.exec('initdb', ['-D', pg.data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync']);
      await pg.up();
    } catch (err) {
      await pg.stop().catch(() => undefined);
      throw err;
    }
    return pg;
  }

  /** A superuser connection (trust auth). */
  get adminUrl(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  /** A fresh, migrated database owned by the test role (no superuser, RLS enforced), as createTestDatabase. */
  async createDatabase(name = 'canopy'): Promise<TestDatabase> {
    await this.asAdmin(async (c) => {
      const role = await c.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [TEST_ROLE]);
      if (role.rowCount === 0) await c.query(`CREATE ROLE ${TEST_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS`);
      await c.query(`CREATE DATABASE ${name} OWNER ${TEST_ROLE}`);
    });
    const url = `postgresql://${TEST_ROLE}@127.0.0.1:${this.port}/${name}`;
    await applyMigrations({ url, migrationsDir: MIGRATIONS_DIR });
    return {
      name,
      url,
      drop: () =>
        this.asAdmin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
    };
  }

  /**
   * pg_ctl restart: `fast` rolls back open transactions and closes every connection cleanly; `immediate` drops
   * them like a crash (crash recovery at start). Either way every client connection ends.
   */
  async restart(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.exec('pg_ctl', ['restart', '-D', this.data, '-m', mode, ...this.startArgs()]);
  }

  /**
   * SIGSTOP to the postmaster and every backend: connections stay open and new ones are accepted by the kernel,
   * but nothing answers until resume(), as when the network between the service and the database drops packets.
   */
  pause(): void {
    const postmaster = this.postmasterPid();
    process.kill(postmaster, 'SIGSTOP'); // first, so it forks no new backend meanwhile
    for (const pid of childrenOf(postmaster)) signal(pid, 'SIGSTOP');
  }

  resume(): void {
    const postmaster = this.postmasterPid();
    for (const pid of childrenOf(postmaster)) signal(pid, 'SIGCONT');
    process.kill(postmaster, 'SIGCONT');
  }

  /** Stops the cluster (immediate: nothing to keep) and deletes its directory. */
  async stop(): Promise<void> {
    try {
      if (existsSync(join(this.data, 'postmaster.pid'))) {
        this.resume(); // a paused server does not stop
        await this.exec('pg_ctl', ['stop', '-D', this.data, '-m', 'immediate', '-w', '-t', '30']);
      }
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private async up(): Promise<void> {
    await this.exec('pg_ctl', ['start', '-D', this.data, ...this.startArgs()]);
  }

  /**
   * A throwaway test server: on the loopback only, its socket in its own directory, no fsync. Its output goes to
   * the log file: a server holding our pipes would keep pg_ctl's call from returning. Commits stay synchronous:
   * with synchronous_commit=off a commit is acknowledged before its WAL is written, and the immediate restart of
   * the chaos suite then lost runs the service had already answered 202 for (their records 404 afterwards). Without
   * fsync the WAL still reaches the kernel before the acknowledgement, and a server crash (not a machine crash) keeps
   * it.
   */
  private startArgs(): string[] {
    return [
      '-l',
      join(this.dir, 'log'),
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off ` +
        `-c full_page_writes=off -c max_connections=200 -c shared_buffers=64MB`,
    ];
  }

  private postmasterPid(): number {
    return Number(readFileSync(join(this.data, 'postmaster.pid'), 'utf8').split('\n')[0]);
  }

  private async exec(tool: string, args: string[]): Promise<void> {
    const path = join(this.bin, tool);
    const [cmd, argv] = this.asUser ? ['runuser', ['-u', this.asUser, '--', path, ...args]] : [path, args];
    try {
      await run(cmd, argv, { cwd: this.dir, timeout: 90_000 });
    } catch (err) {
      const log = existsSync(join(this.dir, 'log'))
        ? readFileSync(join(this.dir, 'log'), 'utf8').slice(-2_000)
        : '';
      throw new Error(`${tool} ${args[0]} failed: ${(err as Error).message}\n${log}`, { cause: err });
    }
  }

  private async asAdmin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
    const client = new Client({ connectionString: this.adminUrl });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }
}

/** Pids whose parent is ppid (from /proc). */
function childrenOf(ppid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // The fields after the command name (which may hold spaces) start at the last ')': state, then ppid.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === ppid) out.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return out;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // exited meanwhile
  }
}
