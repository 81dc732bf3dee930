// The live surface of the API against the real app: session event streams over SSE (Authorization header and
// ?token=) and WebSocket, resumed after a disconnect with `after` / Last-Event-ID (every missed event exactly
// once, compared with a subscriber that never left), the tenant activity feed, the live registry, request and
// run limits, a graceful shutdown with streams open and a run in flight, and the Prometheus metrics.

import { Client } from 'pg';
import { adminUrl, eventually } from '@canopy/testing';
import { Api, newTenant, SseReader, type ApiResponse, type SseEvent } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';
import { WsClient, wsUrl, type WsEventFrame } from './support/ws-client';

const INSTANCE = 'live-e2e-1';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let t: TestApp;
/** Ids of everything made in the main app: none of them may show up in a metric label. */
const madeIds: string[] = [];

beforeAll(async () => {
  t = await startTestApp({ env: { WS_MAX_SUBSCRIPTIONS: '2', CANOPY_INSTANCE_ID: INSTANCE } });
});

afterAll(async () => {
  await t?.close();
});

const bearer = (credential: string) => ({ authorization: `Bearer ${credential}` });

function expectError(res: ApiResponse, status: number, code: string): void {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: {
      error: expect.objectContaining({ code, message: expect.any(String) }),
      requestId: expect.any(String),
    },
  });
}

async function createSession(api: Api, body: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post('/v1/sessions', { model: 'mock:echo', ...body });
  if (res.status !== 201)
    throw new Error(`session creation failed: ${res.status} ${JSON.stringify(res.body)}`);
  madeIds.push(res.body.id);
  return res.body.id as string;
}

async function prompt(api: Api, sessionId: string, content: string): Promise<string> {
  const res = await api.post(`/v1/sessions/${sessionId}/prompt`, { content });
  if (res.status !== 202) throw new Error(`prompt failed: ${res.status} ${JSON.stringify(res.body)}`);
  madeIds.push(res.body.runId);
  return res.body.runId as string;
}

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');

/** The event types of a stream, runs of text_delta collapsed into one (their number depends on timing). */
function shape(types: Array<string | undefined>): Array<string | undefined> {
  return types.filter((type, i) => !(type === 'text_delta' && types[i - 1] === 'text_delta'));
}

/**
 * The events of one run of a titled session, from its `status` busy to the `store` after its `turn`, then the
 * token meter (`context`) once it has ended.
 */
const RUN_SHAPE = [
  'status',
  'message',
  'text_start',
  'text_delta',
  'text_end',
  'message',
  'step',
  'status',
  'turn',
  'tree',
  'store',
  'context',
];

/**
 * True once the events hold the run's `turn`, the `store` that follows it (the end of its commit) and the run's
 * token meter (`context`, published once it has ended).
 */
function runCommitted(events: Array<{ event?: string; data: unknown }>, runId: string): boolean {
  const ofRun = (e: { event?: string; data: unknown }, type: string) =>
    e.event === type && (e.data as { runId?: unknown } | null)?.runId === runId;
  const turn = events.findIndex((e) => ofRun(e, 'turn'));
  const store = events.findIndex((e, i) => i > turn && e.event === 'store');
  return turn >= 0 && store >= 0 && events.slice(store + 1).some((e) => ofRun(e, 'context'));
}

function expectIncreasing(seqs: number[]): void {
  seqs.forEach((seq, i) => {
    expect(Number.isSafeInteger(seq)).toBe(true);
    if (i > 0) expect(seq).toBeGreaterThan(seqs[i - 1]!);
  });
}

function eventsUrl(sessionId: string, query = ''): string {
  return `${t.url}/v1/sessions/${sessionId}/events${query}`;
}

describe('SSE session events', () => {
  let api: Api;
  let key: string;

  beforeAll(async () => {
    ({ api, key } = await newTenant(t, 'sse'));
  });

  it('starts with a snapshot whose id is its seq, then streams every event of a prompt in order', async () => {
    const id = await createSession(api, { title: 'Streamed' });
    const sse = await SseReader.open(eventsUrl(id), bearer(key));
    expect(sse.status).toBe(200);
    const snapshot = await sse.waitFor(() => true);
    expect(snapshot.event).toBe('snapshot');
    expect(snapshot.id).toBe(String(snapshot.data.seq));
    expect(snapshot.data).toEqual({
      seq: expect.any(Number),
      session: expect.objectContaining({ id, title: 'Streamed', status: 'idle' }),
      tree: { nodes: [], path: [], cursors: {}, head: null },
      inFlight: null,
    });

    const runId = await prompt(api, id, 'one two three four');
    await eventually(() => expect(runCommitted(sse.events, runId)).toBe(true));
    const events = sse.events.slice(1);
    expect(shape(events.map((e) => e.event))).toEqual(RUN_SHAPE);
    const ids = events.map((e) => Number(e.id));
    expectIncreasing([snapshot.data.seq, ...ids]);
    expect(events.map((e) => e.id)).toEqual(ids.map(String)); // every event carries its seq as id

    const byType = (type: string) => events.filter((e) => e.event === type);
    expect(byType('status').map((e): unknown => e.data)).toEqual([
      { status: 'busy', runId },
      { status: 'idle', runId: null },
    ]);
    for (const e of events.filter((e) => e.event !== 'status' && e.event !== 'tree' && e.event !== 'store')) {
      expect(e.data.runId).toBe(runId);
    }
    expect(
      byType('text_delta')
        .map((e) => String(e.data.delta))
        .join(''),
    ).toBe('Echo: one two three four');
    expect(byType('turn')[0]!.data).toMatchObject({ stop: 'stop', reason: 'stop' });
    expect(byType('tree')[0]!.data).toMatchObject({ newNodes: [1, 2], path: [1, 2], head: 2 });
    expect(byType('store')[0]!.data).toEqual({ ok: true, kind: 'tree' });
    sse.close();
  });

  it('accepts a user token as ?token= and shows that user only their own sessions', async () => {
    const minted = await api.post('/v1/tokens', { userId: 'alice' });
    const alice = api.as(minted.body.token);
    const own = (await alice.post('/v1/sessions', { model: 'mock:echo', title: 'Alice' })).body.id as string;
    const bobs = await createSession(api, { userId: 'bob' });

    const sse = await SseReader.open(eventsUrl(own, `?token=${encodeURIComponent(minted.body.token)}`));
    expect(sse.status).toBe(200);
    const snapshot = await sse.waitFor(() => true);
    expect(snapshot).toMatchObject({ event: 'snapshot', data: { session: { id: own, userId: 'alice' } } });
    const runId = await prompt(alice, own, 'from alice');
    await eventually(() => expect(runCommitted(sse.events, runId)).toBe(true));
    expect(shape(sse.events.slice(1).map((e) => e.event))).toEqual(RUN_SHAPE);
    sse.close();

    const foreign = await SseReader.open(eventsUrl(bobs, `?token=${encodeURIComponent(minted.body.token)}`));
    expect(foreign.status).toBe(404);
    expect(JSON.parse(foreign.events[0]!.data as string)).toMatchObject({ error: { code: 'not_found' } });
    expect((await SseReader.open(eventsUrl(own))).status).toBe(401);
    expect((await SseReader.open(eventsUrl(own, '?token=nonsense'))).status).toBe(401);
  });

  describe.each([
    ['?after=<last seen id>', (last: string) => ({ query: `?after=${last}`, headers: {} })],
    ['the Last-Event-ID header', (last: string) => ({ query: '', headers: { 'last-event-id': last } })],
  ])('resumed with %s', (_how, resume) => {
    it('delivers every missed event exactly once, in order, then the live ones', async () => {
      const id = await createSession(api, { title: 'Resumable', opts: { delayMs: 30 } });
      const steady = await SseReader.open(eventsUrl(id), bearer(key));
      const flaky = await SseReader.open(eventsUrl(id), bearer(key));
      await steady.waitFor((e) => e.event === 'snapshot');
      await flaky.waitFor((e) => e.event === 'snapshot');

      const runId = await prompt(api, id, words(40));
      await flaky.waitFor((e) => e.event === 'text_delta');
      flaky.close();
      await eventually(() => expect(flaky.ended).toBe(true));
      const last = flaky.events[flaky.events.length - 1]!.id!;
      // Let a few events go by unseen.
      await steady.waitFor((e) => e.event === 'text_delta' && Number(e.id) >= Number(last) + 3);
      const steadySeenAtReconnect = steady.events.length;

      const { query, headers } = resume(last);
      const resumed = await SseReader.open(eventsUrl(id, query), { ...bearer(key), ...headers });
      expect(resumed.status).toBe(200);
      await eventually(() => expect(runCommitted(resumed.events, runId)).toBe(true), { timeoutMs: 10_000 });
      await eventually(() => expect(runCommitted(steady.events, runId)).toBe(true));

      const missedAndLive = steady.events.filter(
        (e) => e.event !== 'snapshot' && Number(e.id) > Number(last),
      );
      expect(resumed.events).toEqual(missedAndLive);
      expect(resumed.events.some((e) => e.event === 'snapshot')).toBe(false);
      expect(new Set(resumed.events.map((e) => e.id)).size).toBe(resumed.events.length);
      // Some of them were published after the reconnect: the stream went on live.
      const lastBeforeReconnect = Number(steady.events[steadySeenAtReconnect - 1]!.id);
      expect(resumed.events.some((e) => Number(e.id) > lastBeforeReconnect)).toBe(true);
      // Together, the two connections saw the run exactly as the steady subscriber did.
      const joined: SseEvent[] = [...flaky.events.slice(1), ...resumed.events];
      expect(joined).toEqual(steady.events.slice(1));
      steady.close();
      resumed.close();
    });
  });
});

describe('the WebSocket endpoint', () => {
  let api: Api;
  let key: string;
  const open: WsClient[] = [];

  const connect = async (credential: string = key) => {
    const ws = await WsClient.connect(wsUrl(t.url, credential));
    open.push(ws);
    return ws;
  };

  beforeAll(async () => {
    ({ api, key } = await newTenant(t, 'websocket'));
  });

  afterEach(async () => {
    await Promise.all(open.splice(0).map((ws) => ws.close()));
  });

  it('subscribes (reply, then a snapshot) and streams a prompt sent as a frame, seqs increasing', async () => {
    const id = await createSession(api, { title: 'Socket' });
    const ws = await connect();
    const reply = await ws.request('subscribe', { sessionId: id });
    expect(reply).toEqual({
      type: 'reply',
      ref: expect.any(String),
      ok: true,
      data: { sessionId: id, mode: 'controller' },
    });
    const snapshot = await ws.waitForEvent((e) => e.event === 'snapshot');
    expect(ws.frames.indexOf(snapshot)).toBeGreaterThan(ws.frames.indexOf(reply));
    expect(snapshot).toEqual({
      type: 'event',
      sessionId: id,
      seq: snapshot.data.seq,
      event: 'snapshot',
      data: expect.objectContaining({ session: expect.objectContaining({ id }), inFlight: null }),
      at: expect.any(Number),
    });

    const started = await ws.request<{ runId: string }>('prompt', {
      sessionId: id,
      content: 'over the socket',
    });
    expect(started).toEqual({
      type: 'reply',
      ref: expect.any(String),
      ok: true,
      data: { runId: expect.stringMatching(UUID) },
    });
    const { runId } = started.data!;
    await eventually(() => expect(runCommitted(ws.events(id), runId)).toBe(true));
    const events = ws.events(id).slice(1);
    expect(shape(events.map((e) => e.event))).toEqual(RUN_SHAPE);
    expectIncreasing([snapshot.seq, ...events.map((e) => e.seq)]);
    expect(events[0]!.data).toEqual({ status: 'busy', runId });

    // Command errors answer the command's ref.
    const unknown = await ws.request('prompt', { sessionId: 'no-such-session', content: 'hi' });
    expect(unknown).toMatchObject({ ok: false, error: { code: 'not_found' } });
    const invalid = await ws.request('prompt', { sessionId: id });
    expect(invalid).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });

  it('answers a prompt with wait:true with the TurnResult (or the JsonResult)', async () => {
    const id = await createSession(api);
    const ws = await connect();
    const turn = await ws.request('prompt', { sessionId: id, content: 'wait for me', wait: true });
    expect(turn).toMatchObject({ ok: true });
    expect(turn.data).toEqual({
      sessionId: id,
      finalResponse: 'Echo: wait for me',
      items: [
        expect.objectContaining({ type: 'message', role: 'user', text: 'wait for me' }),
        expect.objectContaining({ type: 'message', role: 'assistant', text: 'Echo: wait for me' }),
      ],
      durationMs: expect.any(Number),
      numTurns: 1,
      isError: false,
      runId: expect.any(String),
      status: 'completed',
      awaiting: [],
    });
    const json = await ws.request('prompt', {
      sessionId: id,
      content: 'as json',
      wait: true,
      format: 'json',
    });
    expect(json.data).toEqual({
      session_id: id,
      is_error: false,
      duration_ms: expect.any(Number),
      num_turns: 1,
      result: 'Echo: as json',
      run_id: expect.any(String),
      status: 'completed',
      awaiting: [],
    });
    // Navigating lands on a tip: node 2's branch continues to the second exchange.
    const nav = await ws.request('navigate', { sessionId: id, nodeId: 2 });
    expect(nav).toEqual({
      type: 'reply',
      ref: expect.any(String),
      ok: true,
      data: { path: [1, 2, 3, 4], head: 4 },
    });
  });

  it('resumes after a dropped connection with `after`: exactly the missed events, once', async () => {
    const id = await createSession(api, { title: 'Dropped', opts: { delayMs: 30 } });
    const steady = await connect();
    const flaky = await connect();
    expect((await steady.request('subscribe', { sessionId: id })).ok).toBe(true);
    expect((await flaky.request('subscribe', { sessionId: id })).ok).toBe(true);
    await flaky.waitForEvent((e) => e.event === 'snapshot');

    const runId = await prompt(api, id, words(40));
    await flaky.waitForEvent((e) => e.event === 'text_delta');
    flaky.terminate();
    await flaky.closed;
    const lastSeq = Math.max(...flaky.events(id).map((e) => e.seq));
    await steady.waitForEvent((e) => e.event === 'text_delta' && e.seq >= lastSeq + 3);

    const again = await connect();
    const reply = await again.request('subscribe', { sessionId: id, after: lastSeq });
    expect(reply).toMatchObject({ ok: true, data: { sessionId: id, mode: 'controller' } });
    await eventually(() => expect(runCommitted(again.events(id), runId)).toBe(true), { timeoutMs: 10_000 });
    await eventually(() => expect(runCommitted(steady.events(id), runId)).toBe(true));

    const missedAndLive = steady.events(id).filter((e) => e.seq > lastSeq);
    expect(again.events(id)).toEqual(missedAndLive);
    expect(again.events(id).some((e) => e.event === 'snapshot')).toBe(false);
    const joined: WsEventFrame[] = [...flaky.events(id).slice(1), ...again.events(id)];
    expect(joined).toEqual(steady.events(id).slice(1));
  });

  it('stops sending a session’s events after unsubscribe', async () => {
    const id = await createSession(api, { title: 'Unsubscribed' });
    const ws = await connect();
    await ws.request('subscribe', { sessionId: id });
    const first = await prompt(api, id, 'first');
    await eventually(() => expect(runCommitted(ws.events(id), first)).toBe(true));

    const watcher = await SseReader.open(eventsUrl(id), bearer(key));
    await watcher.waitFor((e) => e.event === 'snapshot');
    expect(await ws.request('unsubscribe', { sessionId: id })).toEqual({
      type: 'reply',
      ref: expect.any(String),
      ok: true,
    });
    const seen = ws.events(id).length;
    const second = await prompt(api, id, 'second');
    await eventually(() => expect(runCommitted(watcher.events, second)).toBe(true));
    // A round trip on the same socket: any event frame sent before its reply would have arrived by now.
    expect((await ws.request('unsubscribe', { sessionId: id })).ok).toBe(true);
    expect(ws.events(id)).toHaveLength(seen);
    watcher.close();
  });

  it('opens one subscription for subscribe frames racing for the same session, and frees it on disconnect', async () => {
    const id = await createSession(api, { title: 'Raced' });
    const ws = await connect();
    ws.send({ op: 'subscribe', ref: 'first', sessionId: id });
    ws.send({ op: 'subscribe', ref: 'second', sessionId: id });
    const second = await ws.waitForFrame((f) => f.type === 'reply' && f.ref === 'second');
    expect(second).toMatchObject({ ok: true, data: { sessionId: id, mode: 'controller' } });
    const first = ws.frames.find((f) => f.type === 'reply' && f.ref === 'first');
    expect(first).toMatchObject({ ok: true });
    expect(ws.events(id).filter((e) => e.event === 'snapshot')).toHaveLength(1);
    expect((await api.get(`/v1/live/${id}`)).body).toMatchObject({ controllers: 1 });

    const runId = await prompt(api, id, 'only once');
    await eventually(() => expect(runCommitted(ws.events(id), runId)).toBe(true));
    const seqs = ws.events(id).map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expectIncreasing(seqs);

    await ws.close();
    await eventually(async () =>
      expect((await api.get(`/v1/live/${id}`)).body).toMatchObject({ controllers: 0 }),
    );
  });

  it('refuses more subscriptions than WS_MAX_SUBSCRIPTIONS with rate_limited', async () => {
    const ids = [await createSession(api), await createSession(api), await createSession(api)];
    const ws = await connect();
    expect((await ws.request('subscribe', { sessionId: ids[0] })).ok).toBe(true);
    expect((await ws.request('subscribe', { sessionId: ids[1] })).ok).toBe(true);
    const third = await ws.request('subscribe', { sessionId: ids[2] });
    expect(third).toMatchObject({ ok: false, error: { code: 'rate_limited', message: expect.any(String) } });
    expect(ws.events(ids[2])).toEqual([]);
    // Re-subscribing changes the mode of an existing subscription; unsubscribing frees a slot.
    expect(await ws.request('subscribe', { sessionId: ids[0], mode: 'observer' })).toMatchObject({
      ok: true,
      data: { mode: 'observer' },
    });
    await ws.request('unsubscribe', { sessionId: ids[1] });
    expect((await ws.request('subscribe', { sessionId: ids[2] })).ok).toBe(true);
    expect(ws.isOpen).toBe(true);
  });

  it('lets a user token subscribe to its own sessions only', async () => {
    const minted = await api.post('/v1/tokens', { userId: 'dora' });
    const own = (await api.as(minted.body.token).post('/v1/sessions', { model: 'mock:echo' })).body
      .id as string;
    const other = await createSession(api, { userId: 'eve' });
    const ws = await connect(minted.body.token);
    expect((await ws.request('subscribe', { sessionId: own })).ok).toBe(true);
    expect(await ws.request('subscribe', { sessionId: other })).toMatchObject({
      ok: false,
      error: { code: 'not_found' },
    });
    expect(await ws.request('activity')).toMatchObject({ ok: false, error: { code: 'forbidden' } });
  });

  it('closes a connection with a bad or missing credential with code 1008', async () => {
    const bad = await WsClient.connect(wsUrl(t.url, 'not-a-credential'));
    expect(await bad.closed).toEqual({ code: 1008, reason: 'unauthorized' });
    expect(bad.frames).toEqual([
      { type: 'error', error: { code: 'unauthorized', message: expect.any(String) } },
    ]);
    const anonymous = await WsClient.connect(wsUrl(t.url));
    expect((await anonymous.closed).code).toBe(1008);
    const revokedLooking = await WsClient.connect(wsUrl(t.url, `ck_${'x'.repeat(43)}`));
    expect((await revokedLooking.closed).code).toBe(1008);
  });
});

describe('the activity feed', () => {
  it('shows a tenant its own sessions only, the admin every tenant, and refuses a user token', async () => {
    const a = await newTenant(t, 'activity-a');
    const b = await newTenant(t, 'activity-b');
    const feedA = await SseReader.open(`${t.url}/v1/activity`, bearer(a.key));
    const feedB = await SseReader.open(`${t.url}/v1/activity`, bearer(b.key));
    const feedAdmin = await SseReader.open(`${t.url}/v1/activity`, bearer(TEST_ADMIN_KEY));
    expect([feedA.status, feedB.status, feedAdmin.status]).toEqual([200, 200, 200]);

    const inA = await createSession(a.api);
    const inB = await createSession(b.api);
    const runA = await prompt(a.api, inA, 'busy in A');
    const runB = await prompt(b.api, inB, 'busy in B');

    // The last event of each session's first run: its end, announced after the title its last commit set.
    const ended = (sessionId: string) => (e: SseEvent) =>
      e.event === 'run_finished' && e.data.id === sessionId;
    await feedA.waitFor(ended(inA));
    await feedB.waitFor(ended(inB));
    await feedAdmin.waitFor(ended(inA));
    await feedAdmin.waitFor(ended(inB));

    const of = (feed: SseReader, sessionId: string) => feed.events.filter((e) => e.data.id === sessionId);
    expect(of(feedA, inA).map((e) => e.event)).toEqual([
      'opened',
      'status',
      'run_started',
      'status',
      'title', // with the run's last commit, before the run is announced finished
      'run_finished',
    ]);
    const [opened, busy, started, idle, titled, finished] = of(feedA, inA).map((e): unknown => e.data);
    const at = expect.any(Number);
    // The prompt made the session live, already busy with its run.
    expect(opened).toEqual({ tenantId: a.tenantId, id: inA, title: null, status: 'busy', userId: null, at });
    expect(busy).toEqual({ tenantId: a.tenantId, id: inA, status: 'busy', at });
    expect(started).toEqual({ tenantId: a.tenantId, id: inA, runId: runA, kind: 'prompt', at });
    expect(idle).toEqual({ tenantId: a.tenantId, id: inA, status: 'idle', at });
    expect(finished).toEqual({
      tenantId: a.tenantId,
      id: inA,
      runId: runA,
      status: 'completed',
      usage: expect.objectContaining({ outputTokens: 4 }),
      at,
    });
    expect(titled).toEqual({ tenantId: a.tenantId, id: inA, title: 'busy in A', at });

    // Each tenant sees only itself; the admin sees both.
    expect(feedA.events.every((e) => e.data.tenantId === a.tenantId)).toBe(true);
    expect(of(feedA, inB)).toEqual([]);
    expect(feedB.events.every((e) => e.data.tenantId === b.tenantId)).toBe(true);
    expect(of(feedB, inA)).toEqual([]);
    expect(of(feedB, inB).find((e) => e.event === 'run_finished')?.data.runId).toBe(runB);
    expect(of(feedAdmin, inA).map((e) => e.event)).toEqual(of(feedA, inA).map((e) => e.event));
    expect(of(feedAdmin, inB).every((e) => e.data.tenantId === b.tenantId)).toBe(true);

    expect((await a.api.post(`/v1/sessions/${inA}/close`)).status).toBe(204);
    const closed = await feedA.waitFor((e) => e.event === 'closed');
    expect(closed.data).toEqual({ tenantId: a.tenantId, id: inA, reason: 'close', at: expect.any(Number) });

    const token = (await a.api.post('/v1/tokens', { userId: 'frank' })).body.token as string;
    const asUser = await SseReader.open(`${t.url}/v1/activity`, bearer(token));
    expect(asUser.status).toBe(403);
    expect(JSON.parse(asUser.events[0]!.data as string)).toMatchObject({ error: { code: 'forbidden' } });
    expect((await SseReader.open(`${t.url}/v1/activity?token=${encodeURIComponent(token)}`)).status).toBe(
      403,
    );
    expect((await SseReader.open(`${t.url}/v1/activity`)).status).toBe(401);
    for (const feed of [feedA, feedB, feedAdmin]) feed.close();
  });
});

describe('the live registry', () => {
  it('lists a session while subscribers are connected, with their counts and this instance', async () => {
    const { api, key } = await newTenant(t, 'registry');
    const other = await newTenant(t, 'registry-other');
    const id = await createSession(api, { title: 'Watched', opts: { delayMs: 50 } });
    expectError(await api.get(`/v1/live/${id}`), 404, 'not_found'); // stored, never opened

    const controller = await SseReader.open(eventsUrl(id), bearer(key));
    await controller.waitFor((e) => e.event === 'snapshot');
    const observer = await WsClient.connect(wsUrl(t.url, key));
    expect((await observer.request('subscribe', { sessionId: id, mode: 'observer' })).data).toEqual({
      sessionId: id,
      mode: 'observer',
    });

    const entry = {
      id,
      title: 'Watched',
      status: 'idle',
      userId: null,
      controllers: 1,
      observers: 1,
      since: expect.stringMatching(ISO),
      where: { api: [INSTANCE], worker: null },
    };
    const list = await api.get('/v1/live');
    expect(list.status).toBe(200);
    expect(list.body).toEqual({ data: [entry] });
    expect((await api.get(`/v1/live/${id}`)).body).toEqual(entry);
    expect((await api.get(`/v1/sessions/${id}`)).body.live).toEqual({ controllers: 1, observers: 1 });
    expect((await other.api.get('/v1/live')).body).toEqual({ data: [] });
    expectError(await other.api.get(`/v1/live/${id}`), 404, 'not_found');

    // While a run is in flight, the entry says so and names the instance running it.
    await prompt(api, id, words(30));
    await eventually(async () =>
      expect((await api.get(`/v1/live/${id}`)).body).toMatchObject({
        status: 'busy',
        where: { api: [INSTANCE], worker: INSTANCE },
      }),
    );
    expect((await api.post(`/v1/sessions/${id}/cancel`)).status).toBe(200);

    controller.close();
    await eventually(async () => {
      const live = (await api.get(`/v1/live/${id}`)).body;
      expect(live).toMatchObject({ status: 'idle', controllers: 0, observers: 1, where: { worker: null } });
    });
    expect((await api.post(`/v1/sessions/${id}/close`)).status).toBe(204);
    expectError(await api.get(`/v1/live/${id}`), 404, 'not_found');
    expect((await api.get('/v1/live')).body).toEqual({ data: [] });
    expect(await observer.waitForFrame((f) => f.type === 'end')).toEqual({
      type: 'end',
      sessionId: id,
      reason: 'close',
    });
    await observer.close();
  });
});

describe('limits', () => {
  it('answers the request over RATE_LIMIT_PER_KEY with 429 rate_limited and Retry-After, per key', async () => {
    const app = await startTestApp({ env: { RATE_LIMIT_PER_KEY: '5' } });
    try {
      const { api, tenantId } = await newTenant(app, 'limited');
      // One budget across every route.
      for (let i = 0; i < 3; i++) expect((await api.get('/v1/sessions')).status).toBe(200);
      for (let i = 0; i < 2; i++) expect((await api.get('/v1/live')).status).toBe(200);
      const limited = await api.get('/v1/sessions'); // its route's 4th request, the credential's 6th
      expectError(limited, 429, 'rate_limited');
      const retryAfter = Number(limited.headers.get('retry-after'));
      expect(Number.isInteger(retryAfter)).toBe(true);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
      // Another key of the same tenant has its own budget; the admin is not limited.
      const admin = new Api(app.url, TEST_ADMIN_KEY);
      const second = await admin.post(`/v1/admin/tenants/${tenantId}/keys`);
      expect(second.status).toBe(201);
      expect((await api.as(second.body.apiKey).get('/v1/sessions')).status).toBe(200);
      for (let i = 0; i < 6; i++)
        expect((await admin.post('/v1/admin/tenants', { name: `t${i}` })).status).toBe(201);
    } finally {
      await app.close();
    }
  });

  describe('with one run per tenant and a 2kb body limit', () => {
    let app: TestApp;

    beforeAll(async () => {
      app = await startTestApp({ env: { MAX_CONCURRENT_RUNS_PER_TENANT: '1', HTTP_BODY_LIMIT: '2kb' } });
    });

    afterAll(async () => {
      await app?.close();
    });

    it('answers a second concurrent run of the tenant with 429 rate_limited', async () => {
      const { api } = await newTenant(app, 'one-run');
      const slow = await createSession(api, { opts: { delayMs: 50 } });
      const other = await createSession(api);
      await prompt(api, slow, words(40));
      const refused = await api.post(`/v1/sessions/${other}/prompt`, { content: 'me too' });
      expectError(refused, 429, 'rate_limited');
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expectError(
        await api.post(`/v1/sessions/${other}/branch`, { nodeId: null, content: 'x' }),
        429,
        'rate_limited',
      );

      // Another tenant is not held back; once the run ends, the tenant may run again.
      const neighbour = await newTenant(app, 'neighbour');
      const theirs = await createSession(neighbour.api);
      expect(
        (await neighbour.api.post(`/v1/sessions/${theirs}/prompt`, { content: 'hi', wait: true })).status,
      ).toBe(200);
      expect((await api.post(`/v1/sessions/${slow}/cancel`)).status).toBe(200);
      const after = await api.post(`/v1/sessions/${other}/prompt`, { content: 'now', wait: true });
      expect(after.status).toBe(200);
      expect(after.body.finalResponse).toBe('Echo: now');
    });

    it('answers a body over HTTP_BODY_LIMIT with 413 payload_too_large', async () => {
      const { api } = await newTenant(app, 'big-bodies');
      expectError(
        await api.post('/v1/sessions', { model: 'mock:echo', system: 'x'.repeat(4_096) }),
        413,
        'payload_too_large',
      );
      const id = await createSession(api, { system: 'x'.repeat(1_500) });
      expectError(
        await api.post(`/v1/sessions/${id}/prompt`, { content: 'y'.repeat(3_000) }),
        413,
        'payload_too_large',
      );
      expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('idle');
    });
  });
});

describe('graceful shutdown', () => {
  /** A superuser connection to an app's own test database (row-level security does not hide rows from it). */
  async function inDatabase<T>(app: TestApp, fn: (c: Client) => Promise<T>): Promise<T> {
    const url = new URL(adminUrl());
    url.pathname = `/${app.database!.name}`;
    const client = new Client({ connectionString: url.toString() });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  async function openStreams(app: TestApp, key: string, id: string) {
    const sse = await SseReader.open(`${app.url}/v1/sessions/${id}/events`, bearer(key));
    await sse.waitFor((e) => e.event === 'snapshot');
    const activity = await SseReader.open(`${app.url}/v1/activity`, bearer(key));
    const ws = await WsClient.connect(wsUrl(app.url, key));
    expect((await ws.request('subscribe', { sessionId: id })).ok).toBe(true);
    return { sse, activity, ws };
  }

  async function expectClosedForReconnect(streams: Awaited<ReturnType<typeof openStreams>>): Promise<void> {
    for (const reader of [streams.sse, streams.activity]) {
      await eventually(() => expect(reader.ended).toBe(true));
      const last = reader.events[reader.events.length - 1];
      expect(last).toEqual({ id: undefined, event: 'end', data: { reason: 'shutdown', reconnect: true } });
    }
    expect(await streams.ws.closed).toEqual({ code: 1012, reason: expect.any(String) });
  }

  async function expectNoNewConnections(app: TestApp, key: string): Promise<void> {
    await expect(fetch(`${app.url}/healthz`)).rejects.toThrow();
    await expect(WsClient.connect(wsUrl(app.url, key))).rejects.toThrow();
  }

  it('cancels a run that outlives the grace period, ends SSE streams and closes WebSockets with 1012', async () => {
    const app = await startTestApp({ env: { SHUTDOWN_GRACE_MS: '200' } });
    let closed = false;
    try {
      const { api, key } = await newTenant(app, 'shutdown');
      const id = await createSession(api, { title: 'Interrupted', opts: { delayMs: 100 } });
      const streams = await openStreams(app, key, id);
      const runId = await prompt(api, id, words(50));
      await streams.sse.waitFor((e) => e.event === 'text_delta');

      await app.app.close();
      closed = true;

      await expectClosedForReconnect(streams);
      // The run was cancelled (announced before the end), never left busy, and committed nothing.
      const seen = streams.sse.events.map((e) => e.event);
      expect(seen).toContain('cancelled');
      expect(seen.indexOf('cancelled')).toBeLessThan(seen.indexOf('end'));
      expect(streams.ws.events(id).some((e) => e.event === 'cancelled')).toBe(true);
      await expectNoNewConnections(app, key);

      await inDatabase(app, async (db) => {
        const session = await db.query('SELECT status, active_run_id FROM sessions WHERE id = $1', [id]);
        expect(session.rows).toEqual([{ status: 'idle', active_run_id: null }]);
        const run = await db.query('SELECT status, finished_at FROM runs WHERE id = $1', [runId]);
        expect(run.rows).toEqual([{ status: 'cancelled', finished_at: expect.any(Date) }]);
        const nodes = await db.query('SELECT count(*)::int AS n FROM nodes WHERE session_id = $1', [id]);
        expect(nodes.rows).toEqual([{ n: 0 }]);
      });
    } finally {
      if (!closed) await app.app.close();
      await app.database?.drop();
    }
  });

  it('lets a run that ends within the grace period finish, refusing new commands meanwhile', async () => {
    const app = await startTestApp({ env: { SHUTDOWN_GRACE_MS: '10000' } });
    let closed = false;
    try {
      const { api, key } = await newTenant(app, 'drain');
      const id = await createSession(api, { title: 'Drained', opts: { delayMs: 40 } });
      const streams = await openStreams(app, key, id);
      const runId = await prompt(api, id, words(15));
      await streams.sse.waitFor((e) => e.event === 'text_delta');

      const closing = app.app.close();
      // Draining: reads still answer, commands get 503 unavailable (the session is busy: no run could start).
      await eventually(async () =>
        expectError(await api.post(`/v1/sessions/${id}/navigate`, { nodeId: null }), 503, 'unavailable'),
      );
      await closing;
      closed = true;

      await expectClosedForReconnect(streams);
      const seen = streams.sse.events.map((e) => e.event);
      expect(seen.slice(-5)).toEqual(['turn', 'tree', 'store', 'context', 'end']);
      expect(runCommitted(streams.ws.events(id), runId)).toBe(true);
      await expectNoNewConnections(app, key);

      await inDatabase(app, async (db) => {
        const session = await db.query('SELECT status, active_run_id FROM sessions WHERE id = $1', [id]);
        expect(session.rows).toEqual([{ status: 'idle', active_run_id: null }]);
        const run = await db.query('SELECT status FROM runs WHERE id = $1', [runId]);
        expect(run.rows).toEqual([{ status: 'completed' }]);
        const nodes = await db.query('SELECT count(*)::int AS n FROM nodes WHERE session_id = $1', [id]);
        expect(nodes.rows).toEqual([{ n: 2 }]);
      });
    } finally {
      if (!closed) await app.app.close();
      await app.database?.drop();
    }
  });
});

describe('metrics', () => {
  it('exposes request latency by route pattern, runs by status, live sessions and events published', async () => {
    // Some traffic of its own, so the test stands alone.
    const { api, key } = await newTenant(t, 'metrics');
    const id = await createSession(api);
    const sse = await SseReader.open(eventsUrl(id), bearer(key));
    await sse.waitFor((e) => e.event === 'snapshot');
    expect((await api.post(`/v1/sessions/${id}/prompt`, { content: 'count me', wait: true })).status).toBe(
      200,
    );
    expect((await api.get(`/v1/sessions/${id}/tree`)).status).toBe(200);

    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await res.text();
    const value = (pattern: RegExp) => {
      const match = pattern.exec(text);
      expect(match).not.toBeNull();
      return Number(match![1]);
    };

    expect(text).toMatch(
      /^canopy_http_request_duration_seconds_count\{method="POST",route="\/v1\/sessions\/:id\/prompt",status="200"\} [1-9]/m,
    );
    expect(text).toMatch(
      /^canopy_http_request_duration_seconds_bucket\{[^}]*route="\/v1\/sessions\/:id\/tree"/m,
    );
    const routes = new Set([...text.matchAll(/route="([^"]*)"/g)].map((m) => m[1]!));
    expect(routes).toContain('/v1/sessions/:id/events');
    for (const made of madeIds) expect(text).not.toContain(made);
    for (const route of routes)
      expect(route === 'unmatched' || /^\/[A-Za-z0-9/:._-]*$/.test(route)).toBe(true);

    expect(value(/^canopy_runs_total\{status="completed"\} (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^canopy_live_sessions (\d+)/m)).toBeGreaterThanOrEqual(1);
    expect(value(/^canopy_events_published_total (\d+)/m)).toBeGreaterThan(0);
    expect(value(/^canopy_subscribers\{mode="controller"\} (\d+)/m)).toBeGreaterThanOrEqual(1);
    // The run's statements took pooled connections; the waits are a sum of times (maybe zero when idle).
    expect(value(/^canopy_db_pool_checkouts_total (\d+)/m)).toBeGreaterThan(0);
    expect(value(/^canopy_db_pool_wait_seconds_total ([\d.e+-]+)/m)).toBeGreaterThanOrEqual(0);
    expect(value(/^canopy_db_pool_waiting (\d+)/m)).toBeGreaterThanOrEqual(0);
    sse.close();
  });
});
