// The embedded runtime heals its database. Under a steady load from two tenants (prompts with `wait: true`, and
// reads of trees and session lists), the PGlite thread is (a) killed, as a crash would, and (b) wedged (an
// idle-in-transaction timeout fired inside PGlite, which leaves its thread spinning forever: what made it refuse
// service for good before). Each time: every request settles within its deadline (none hangs), those caught by
// the outage answer 503 with Retry-After and nothing answers another 5xx, the service is ready again within the
// bound, every prompt answered as completed is in its tree exactly once and no failed one is, and no session stays
// busy. (c) A database that cannot come back (its data directory no longer holds a database) makes /healthz answer
// 503 past DATABASE_EMBEDDED_RECOVERY_MS, and it serves again once it can.

/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies of any shape, read loosely */

import { mkdtempSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { eventually } from '@canopy/testing';
import { EMBEDDED_DATABASE_SUPERVISOR, type EmbeddedDatabaseSupervisor } from '@canopy/store';
import { startTestApp, type TestApp } from './support/test-app';
import { newTenant, type Api } from './support/api-client';

const LIVENESS_MS = 3_000;
const RECOVERY_MS = 10_000;
/** No request may take longer than this to be answered (the outage is far shorter). */
const REQUEST_DEADLINE_MS = 30_000;
/** The service must be ready again within this after the fault. */
const BACK_WITHIN_MS = 45_000;
const SESSIONS_PER_TENANT = 3;

let dataDir: string;
let app: TestApp;
let supervisor: EmbeddedDatabaseSupervisor;
let tenants: Array<{ api: Api; key: string; sessions: string[] }>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Numbers every prompt of the file, so each text is unique in its tree across the cases. */
let promptSerial = 0;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-heals-e2e-'));
  app = await startTestApp({
    embeddedDataDir: dataDir,
    env: {
      DATABASE_EMBEDDED_LIVENESS_MS: String(LIVENESS_MS),
      DATABASE_EMBEDDED_RECOVERY_MS: String(RECOVERY_MS),
      // A request waiting for the database's one connection while it is wedged gives up within this (503).
      DATABASE_TX_MAX_WAIT_MS: '5000',
      DATABASE_UPKEEP_INTERVAL_MS: '0',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
    },
  });
  supervisor = app.app.get<EmbeddedDatabaseSupervisor>(EMBEDDED_DATABASE_SUPERVISOR);
  tenants = [];
  for (const name of ['heals-a', 'heals-b']) {
    const { api, key } = await newTenant(app, name);
    const sessions: string[] = [];
    for (let i = 0; i < SESSIONS_PER_TENANT; i++) {
      const res = await api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 10 } });
      expect(res.status).toBe(201);
      sessions.push(res.body.id as string);
    }
    tenants.push({ api, key, sessions });
  }
}, 240_000);

afterAll(async () => {
  await app?.close();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

interface Answer {
  what: string;
  status: number; // 0: no answer within REQUEST_DEADLINE_MS
  retryAfter: string | null;
  body: any;
}

interface Prompted {
  sessionId: string;
  tenant: number;
  prompt: string;
  status: string; // the run's: completed, error, ...
}

/** Prompts (wait: true) on every session and reads from both tenants, until stopped; records every answer. */
class Load {
  readonly answers: Answer[] = [];
  readonly prompted: Prompted[] = [];
  private stopped = false;
  private loops: Promise<void>[] = [];

  start(): void {
    tenants.forEach((t, tenant) => {
      for (const sessionId of t.sessions) this.loops.push(this.prompts(t.key, tenant, sessionId));
      this.loops.push(this.reads(t.key, t.sessions));
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.loops);
  }

  completed(): number {
    return this.prompted.filter((p) => p.status === 'completed').length;
  }

  private async request(key: string, what: string, method: string, path: string, body?: unknown) {
    let answer: Answer;
    try {
      const res = await fetch(`${app.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_DEADLINE_MS),
      });
      const text = await res.text();
      answer = {
        what,
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        body: text ? (JSON.parse(text) as unknown) : undefined,
      };
    } catch {
      answer = { what, status: 0, retryAfter: null, body: undefined };
    }
    this.answers.push(answer);
    return answer;
  }

  private async prompts(key: string, tenant: number, sessionId: string): Promise<void> {
    while (!this.stopped) {
      const prompt = `${sessionId} prompt ${++promptSerial} one two three four five`;
      const res = await this.request(key, 'prompt', 'POST', `/v1/sessions/${sessionId}/prompt`, {
        content: prompt,
        wait: true,
      });
      if (res.status === 200) {
        this.prompted.push({ sessionId, tenant, prompt, status: res.body.status as string });
      } else {
        // 503 while the database is down (retry after a moment), or 409 while a run the outage caught ends.
        if (res.status === 202) this.prompted.push({ sessionId, tenant, prompt, status: 'unknown' });
        await sleep(200);
      }
    }
  }

  private async reads(key: string, sessions: string[]): Promise<void> {
    for (let i = 0; !this.stopped; i++) {
      if (i % 2 === 0) {
        await this.request(key, 'tree', 'GET', `/v1/sessions/${sessions[i % sessions.length]}/tree`);
      } else {
        await this.request(key, 'list', 'GET', '/v1/sessions?limit=5');
      }
      await sleep(50);
    }
  }
}

async function status(path: string): Promise<{ status: number; retryAfter: string | null }> {
  const res = await fetch(`${app.url}${path}`, { signal: AbortSignal.timeout(5_000) }).catch(() => null);
  return { status: res?.status ?? 0, retryAfter: res?.headers.get('retry-after') ?? null };
}

/** Waits for a steady load: a few prompts completed since `from`. */
async function steady(load: Load, from: number): Promise<void> {
  await eventually(() => expect(load.completed()).toBeGreaterThanOrEqual(from + 2 * tenants.length), {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
}

/** Runs the load through `fault`, until the service is back and steady again; answers the load and the figures. */
async function throughFault(fault: () => Promise<void>): Promise<{ load: Load; backAfterMs: number }> {
  const load = new Load();
  load.start();
  try {
    await steady(load, 0);
    const restartsBefore = supervisor.restarts;
    const faultAt = Date.now();
    await fault();
    // Ready again, on a restarted database.
    await eventually(
      async () => {
        expect(supervisor.restarts).toBe(restartsBefore + 1);
        expect((await status('/readyz')).status).toBe(200);
      },
      { timeoutMs: BACK_WITHIN_MS, intervalMs: 100 },
    );
    const backAfterMs = Date.now() - faultAt;
    // Serving again: prompts complete after the restart too.
    await steady(load, load.completed());
    return { load, backAfterMs };
  } finally {
    await load.stop();
  }
}

/** One line of figures per case: the answers by status, the prompts' runs by status, how long until ready. */
function summary(name: string, load: Load, backAfterMs: number): void {
  const count = (values: Array<string | number>) => {
    const m = new Map<string, number>();
    for (const v of values) m.set(String(v), (m.get(String(v)) ?? 0) + 1);
    return JSON.stringify(Object.fromEntries(m));
  };
  process.stdout.write(
    `[heals] ${name}: ready again after ${backAfterMs} ms; answers ${count(load.answers.map((a) => a.status))}; ` +
      `runs ${count(load.prompted.map((p) => p.status))}\n`,
  );
}

/** What every fault must leave: no hang, 503s with Retry-After only, trees whole, no session busy. */
async function expectHealed(load: Load): Promise<void> {
  const hung = load.answers.filter((a) => a.status === 0);
  expect(hung).toEqual([]);
  const otherFailures = load.answers.filter((a) => a.status >= 500 && a.status !== 503);
  expect(otherFailures).toEqual([]);
  const unavailable = load.answers.filter((a) => a.status === 503);
  expect(unavailable.length).toBeGreaterThan(0); // the outage was seen
  expect(unavailable.filter((a) => !a.retryAfter)).toEqual([]);
  expect(unavailable.filter((a) => a.body?.error?.code !== 'unavailable')).toEqual([]);
  // Nothing committed lost, nothing failed committed, nothing twice.
  const wrong: string[] = [];
  for (const [i, t] of tenants.entries()) {
    for (const sessionId of t.sessions) {
      const res = await t.api.get(`/v1/sessions/${sessionId}/tree`);
      expect(res.status).toBe(200);
      const prompts = new Map<string, number>();
      for (const n of res.body.nodes as Array<{ message: { role: string; content: any[] } }>) {
        if (n.message.role !== 'user') continue;
        const text = n.message.content.map((b: { text?: string }) => b.text ?? '').join('');
        prompts.set(text, (prompts.get(text) ?? 0) + 1);
      }
      for (const p of load.prompted.filter((p) => p.tenant === i && p.sessionId === sessionId)) {
        const seen = prompts.get(p.prompt) ?? 0;
        if (p.status === 'completed' && seen !== 1)
          wrong.push(`completed, in the tree ${seen}x: ${p.prompt}`);
        if (p.status !== 'completed' && p.status !== 'unknown' && seen !== 0)
          wrong.push(`${p.status}, yet in the tree: ${p.prompt}`);
      }
    }
  }
  expect(wrong).toEqual([]);
  // No session left busy.
  await eventually(
    async () => {
      for (const t of tenants) {
        for (const sessionId of t.sessions) {
          expect((await t.api.get(`/v1/sessions/${sessionId}`)).body.status).toBe('idle');
        }
      }
    },
    { timeoutMs: 15_000, intervalMs: 250 },
  );
}

describe('the embedded database heals', () => {
  it('(a) comes back when its thread is killed mid-load, losing nothing committed', async () => {
    const { load, backAfterMs } = await throughFault(() => supervisor.embedded.kill());
    summary('killed', load, backAfterMs);
    await expectHealed(load);
    const metrics = await fetch(`${app.url}/metrics`).then((r) => r.text());
    expect(metrics).toMatch(/^canopy_db_embedded_restarts_total [1-9]/m);
    expect(metrics).toMatch(/^canopy_db_embedded_up 1$/m);
  }, 240_000);

  it('(b) comes back when its thread is wedged mid-load', async () => {
    let wedger: Client | null = null;
    const { load, backAfterMs } = await throughFault(async () => {
      // A transaction left idle past an idle-in-transaction timeout: once it fires, PGlite's thread spins on the
      // next statement and never answers again.
      wedger = new Client({ connectionString: supervisor.embedded.url });
      wedger.on('error', () => undefined);
      await wedger.connect();
      await wedger.query("BEGIN; SELECT set_config('idle_in_transaction_session_timeout', '100', true)");
      await sleep(400);
      void wedger.query('SELECT 1').catch(() => undefined);
    });
    void (wedger as Client | null)?.end().catch(() => undefined);
    summary('wedged', load, backAfterMs);
    await expectHealed(load);
  }, 240_000);

  it('(c) fails /healthz when it cannot come back within the bound, and recovers once it can', async () => {
    const pgVersion = join(dataDir, 'pgdata', 'PG_VERSION');
    expect((await status('/healthz')).status).toBe(200);
    renameSync(pgVersion, `${pgVersion}.away`);
    try {
      await supervisor.embedded.kill();
      // Down: database routes and readiness answer 503 at once, liveness still 200 within the bound.
      await eventually(async () => expect((await status('/readyz')).status).toBe(503), { timeoutMs: 5_000 });
      const read = await tenants[0]!.api.get(`/v1/sessions/${tenants[0]!.sessions[0]}`);
      expect(read.status).toBe(503);
      expect(read.headers.get('retry-after')).toBe('1');
      await eventually(
        async () => {
          const healthz = await status('/healthz');
          expect(healthz).toEqual({ status: 503, retryAfter: '1' });
        },
        { timeoutMs: RECOVERY_MS + 15_000, intervalMs: 250 },
      );
    } finally {
      renameSync(`${pgVersion}.away`, pgVersion);
    }
    await eventually(async () => expect((await status('/healthz')).status).toBe(200), {
      timeoutMs: BACK_WITHIN_MS,
      intervalMs: 250,
    });
    await eventually(async () => expect((await status('/readyz')).status).toBe(200), { timeoutMs: 5_000 });
    const res = await tenants[1]!.api.post(`/v1/sessions/${tenants[1]!.sessions[0]}/prompt`, {
      content: 'after the outage',
      wait: true,
    });
    expect(res.body).toMatchObject({ status: 'completed' });
  }, 240_000);
});
