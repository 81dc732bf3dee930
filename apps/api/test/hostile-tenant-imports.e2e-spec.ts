// A tenant throwing import bombs at the service, on both runtimes (the embedded PGlite and Postgres), while another
// tenant goes on with its work: the documented cap (a 100,000-node canopy document) imports whole, in batches,
// the new session invisible until complete; a body over the limit answers 413, more nodes than the cap or JSON
// nested 100,000 deep answer 400; the ChatGPT shape that was superlinear (40,000 message-less nodes) and NDJSON
// lines of large documents import; and all the while the service's event loop stays responsive (blocked under
// 50 ms at the 99th percentile, counted in the main thread's own CPU time so that the figure is the service's and
// not the machine's: conversions run on the import thread) and every request of the bystander tenant is answered. A tenant's heavy operations are limited: past HEAVY_OPERATIONS_PER_TENANT in
// flight its next answers 429 too_many_operations with Retry-After, while another tenant's go through.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { canopyDocument, emptyChain, measureLoopBlocking } from '@canopy/testing';
import { MAX_IMPORT_NODES } from '@canopy/core';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

jest.setTimeout(300_000);

const RUNTIMES = ['embedded', 'postgres'] as const;
/** How long the event loop may be blocked while imports run, at the 99th percentile. */
const LOOP_BLOCKED_P99_MS = 50;

const apps = new Map<(typeof RUNTIMES)[number], TestApp>();
let dataDir: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-imports-'));
  // The bystander's loop and the polls go at their pace: no request-rate limit in the way.
  // Imports pause less between batches than by default (the fairness bench measures the default's effect).
  const env = { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_TENANT: '0', IMPORT_BATCH_PAUSE_RATIO: '0.5' };
  apps.set('embedded', await startTestApp({ embeddedDataDir: dataDir, env }));
  apps.set('postgres', await startTestApp({ env }));
}, 120_000);

afterAll(async () => {
  for (const app of apps.values()) await app.close();
  rmSync(dataDir, { recursive: true, force: true });
});

/**
 * How long the bystander waits between its requests, and the importer between its polls: a user's pace rather than
 * a load generator's, so that their own work (they share the process with the service) does not slow the import.
 */
const CLIENT_PACE_MS = 20;

/** A bystander's traffic: lists and prompts in a loop until stopped; answers every status it got. */
function bystander(api: Api, sessionId: string) {
  const statuses: number[] = [];
  let stopped = false;
  const loop = (async () => {
    for (let i = 0; !stopped; i++) {
      const res =
        i % 2 === 0
          ? await api.get('/v1/sessions?limit=20')
          : await api.post(`/v1/sessions/${sessionId}/prompt`, { content: `still here ${i}`, wait: true });
      statuses.push(res.status);
      await new Promise((r) => setTimeout(r, CLIENT_PACE_MS));
    }
  })();
  return {
    async stop(): Promise<number[]> {
      stopped = true;
      await loop;
      return statuses;
    },
  };
}

/**
 * Runs `work` while measuring how long this process's event loop (the in-process service's) is blocked; answers
 * the 99th percentile in ms.
 */
async function loopDelayDuring<T>(work: () => Promise<T>): Promise<{ result: T; p99Ms: number }> {
  const meter = measureLoopBlocking();
  try {
    const result = await work();
    return { result, p99Ms: meter.stop().p99Ms };
  } finally {
    meter.stop();
  }
}

/** `work` measured by loopDelayDuring while the bystander's traffic runs (stopped whatever happens). */
async function besideBystander<T>(
  api: Api,
  sessionId: string,
  work: () => Promise<T>,
): Promise<{ result: T; p99Ms: number; statuses: number[] }> {
  const traffic = bystander(api, sessionId);
  const statuses: number[] = [];
  try {
    // Filled by the finally below before the caller reads it.
    return { ...(await loopDelayDuring(work)), statuses };
  } finally {
    statuses.push(...(await traffic.stop()));
  }
}

/** The bystander got answers, every one a success. */
function expectAnswered(statuses: number[]): void {
  expect(statuses.length).toBeGreaterThan(0);
  expect(statuses.filter((s) => s !== 200 && s !== 201)).toEqual([]);
}

function post(api: Api, path: string, body: string, type = 'application/json'): Promise<ApiResponse> {
  return api.request('POST', path, body, { 'content-type': type });
}

describe.each(RUNTIMES)('%s', (runtime) => {
  let t: TestApp;
  let a: Api;
  let b: Api;
  let bSession: string;

  beforeAll(async () => {
    t = apps.get(runtime)!;
    a = (await newTenant(t, `importer ${runtime}`)).api;
    b = (await newTenant(t, `bystander ${runtime}`)).api;
    bSession = (await b.post('/v1/sessions', { model: 'mock:echo' })).body.id;
  });

  it('the documented cap imports whole, invisible until complete, the loop responsive, the bystander answered', async () => {
    const doc = canopyDocument(MAX_IMPORT_NODES);
    const id = `cap-${runtime}`;
    (doc.session as Record<string, unknown>).id = id;
    const body = JSON.stringify({ format: 'canopy', data: doc });
    // Polls of the session while the import runs, one round after the other: by id, and in the list.
    const rounds: Array<{ shown: boolean; listed: boolean; whole?: boolean }> = [];
    let done = false;
    const {
      result: imported,
      p99Ms,
      statuses,
    } = await besideBystander(b, bSession, async () => {
      const request = post(a, '/v1/sessions/import', body).finally(() => (done = true));
      while (!done) {
        const [one, list] = await Promise.all([a.get(`/v1/sessions/${id}`), a.get('/v1/sessions?limit=100')]);
        expect(list.status).toBe(200);
        expect([200, 404]).toContain(one.status);
        const shown = one.status === 200;
        const last = shown ? await a.get(`/v1/sessions/${id}/nodes/${MAX_IMPORT_NODES}`) : null;
        rounds.push({
          shown,
          listed: (list.body.data as Array<{ id: string }>).some((s) => s.id === id),
          ...(last ? { whole: last.status === 200 } : {}),
        });
        await new Promise((r) => setTimeout(r, CLIENT_PACE_MS));
      }
      return request;
    });
    expect(imported.status).toBe(201);
    // The round that crossed the publication may see it one way and not the other (its two requests ran side by
    // side); from the next on it is shown and listed. Whenever it is shown, it is whole.
    const firstSeen = rounds.findIndex((r) => r.shown || r.listed);
    expect(firstSeen === -1 ? rounds.length : firstSeen).toBeGreaterThan(0);
    const seen = firstSeen === -1 ? [] : rounds.slice(firstSeen);
    expect(seen.slice(1).filter((r) => !r.shown || !r.listed)).toEqual([]);
    expect(seen.filter((r) => r.shown && !r.whole)).toEqual([]);
    expectAnswered(statuses);
    expect(p99Ms).toBeLessThan(LOOP_BLOCKED_P99_MS);
    // Whole: its first and last nodes, and a prompt continues after the last.
    expect((await a.get(`/v1/sessions/${id}/nodes/1`)).status).toBe(200);
    expect((await a.get(`/v1/sessions/${id}/nodes/${MAX_IMPORT_NODES}`)).status).toBe(200);
    const reply = await a.post(`/v1/sessions/${id}/prompt`, { content: 'after the import', wait: true });
    expect(reply.status).toBe(200);
    expect((await a.get(`/v1/sessions/${id}/nodes/${MAX_IMPORT_NODES + 2}`)).status).toBe(200);
  });

  it('refuses what is over the limits: 413 for the body, 400 for the node count and the depth', async () => {
    const big = JSON.stringify({
      format: 'openai',
      data: [{ role: 'user', content: 'x'.repeat(21 * 1024 * 1024) }],
    });
    const tooBig = await post(a, '/v1/sessions/import', big);
    expect(tooBig.status).toBe(413);
    expect(tooBig.body.error.code).toBe('payload_too_large');

    const over = await post(
      a,
      '/v1/sessions/import',
      JSON.stringify({ format: 'canopy', data: canopyDocument(MAX_IMPORT_NODES + 1) }),
    );
    expect(over.status).toBe(400);
    expect(JSON.stringify(over.body.error)).toContain('data.tree.nodes');

    const depth = 100_000;
    const deep = `{"format":"canopy","data":${'['.repeat(depth)}${']'.repeat(depth)}}`;
    const { result: nested, p99Ms } = await loopDelayDuring(() => post(a, '/v1/sessions/import', deep));
    expect(nested.status).toBe(400);
    expect(nested.body.error.code).toBe('bad_request');
    expect(p99Ms).toBeLessThan(LOOP_BLOCKED_P99_MS);

    const notJson = await post(a, '/v1/sessions/import', '{"format": "canopy", "data": ');
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.code).toBe('bad_request');
  });

  it('imports the shape that was superlinear (ChatGPT, 40,000 message-less nodes) with the loop responsive', async () => {
    const body = JSON.stringify({ format: 'chatgpt', data: emptyChain(40_000) });
    const {
      result: imported,
      p99Ms,
      statuses,
    } = await besideBystander(b, bSession, () => post(a, '/v1/sessions/import', body));
    expect(imported.status).toBe(201);
    expectAnswered(statuses);
    // This import takes a few hundred ms: its 99th percentile is its single worst tick, which one major collection
    // of this process's heap (it holds both apps) can reach (60 ms seen once in CI). The superlinear shape blocked
    // the loop for seconds.
    expect(p99Ms).toBeLessThan(LOOP_BLOCKED_P99_MS * 2);
    // The two messages, nothing of the empty chain.
    expect((await a.get(`/v1/sessions/${imported.body.id as string}/nodes/2`)).status).toBe(200);
    expect((await a.get(`/v1/sessions/${imported.body.id as string}/nodes/3`)).status).toBe(404);
  });

  it('imports NDJSON lines of large documents, each all or nothing, with the loop responsive', async () => {
    const line = (n: number) => JSON.stringify(canopyDocument(n));
    const body = [line(15_000), '{"format": "canopy", "version": 1}', line(15_000)].join('\n');
    const {
      result: res,
      p99Ms,
      statuses,
    } = await besideBystander(b, bSession, () =>
      post(a, '/v1/import?format=canopy', body, 'application/x-ndjson'),
    );
    expect(res.status).toBe(200);
    const reports = (res.body as string)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { line: number; ok: boolean; nodes?: number });
    expect(reports.map((r) => [r.line, r.ok, r.nodes])).toEqual([
      [1, true, 15_000],
      [2, false, undefined],
      [3, true, 15_000],
    ]);
    expectAnswered(statuses);
    expect(p99Ms).toBeLessThan(LOOP_BLOCKED_P99_MS);
  });

  it('limits a tenant’s heavy operations in flight; another tenant’s go through', async () => {
    const limit = t.config.imports.heavyOperationsPerTenant;
    const { api: heavy, key } = await newTenant(t, `heavy ${runtime}`);
    // Bulk imports held open: each holds a lease until its body ends.
    const held: Array<{ end(): Promise<void> }> = [];
    try {
      for (let i = 0; i < limit; i++) held.push(await openImportStream(t.url, key));
      const refused = await heavy.post('/v1/sessions/delete', { ids: ['nothing'] });
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('too_many_operations');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      const refusedStream = await post(heavy, '/v1/import', '', 'application/x-ndjson');
      expect(refusedStream.status).toBe(429);
      // Another tenant is not held back.
      const other = await b.post('/v1/sessions/delete', { ids: ['nothing'] });
      expect(other.status).toBe(200);
    } finally {
      for (const stream of held) await stream.end();
    }
    const after = await heavy.post('/v1/sessions/delete', { ids: ['nothing'] });
    expect(after.status).toBe(200);
  });
});

/**
 * A bulk import whose body stays open after its first line: resolves once the service has answered that line
 * (the import, and its lease, are under way); end() closes the body and reads the rest.
 */
async function openImportStream(baseUrl: string, key: string): Promise<{ end(): Promise<void> }> {
  let push!: (chunk: string | null) => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      push = (chunk) =>
        chunk === null ? controller.close() : controller.enqueue(new TextEncoder().encode(chunk));
    },
  });
  push(`${JSON.stringify([{ role: 'user', content: 'hi' }])}\n`);
  const res = await fetch(`${baseUrl}/v1/import?format=openai`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-ndjson' },
    body,
    duplex: 'half',
  });
  expect(res.status).toBe(200);
  const reader = res.body!.getReader();
  const first = await reader.read();
  expect(new TextDecoder().decode(first.value)).toContain('"ok":true');
  return {
    async end() {
      push(null);
      while (!(await reader.read()).done);
    },
  };
}
