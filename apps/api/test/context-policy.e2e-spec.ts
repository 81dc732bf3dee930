// Long conversations against a model's window, over HTTP with a real provider code path (the local fake provider,
// which records every request): a session on `truncate` goes on past the window with every request inside it,
// the oldest whole turns left out and the newest prompt always sent; on `none` (the default) a request over the
// window ends the run with context_length_exceeded and its figures before any provider call; a provider's own
// "too long" answer maps to the same code; GET /v1/sessions/:id/context shows what the next run would send.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { tokenCounterFor } from '@canopy/agent';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, FakeLlmServer } from '@canopy/testing';
import { Api, newTenant, SseReader } from './support/api-client';
import {
  answerWithSummaries,
  fakeProviderEnv,
  isSummaryCall,
  mainCalls as mainCallsOf,
  sentTexts,
  summaryCalls as summaryCallsOf,
  turnsIn,
} from './support/long-context';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';

const WINDOW = 2_000;
const MAX_OUTPUT = 256;
const MODEL = 'openai-compatible:small';

let t: TestApp;
let fake: FakeLlmServer;
let api: Api;
let key: string;
/** The apps' environment: the fake provider as the deployment's OpenAI-compatible server, with a small window. */
let ENV: Record<string, string>;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  ENV = fakeProviderEnv(fake, { name: 'small', window: WINDOW, maxOutput: MAX_OUTPUT });
  t = await startTestApp({ env: ENV });
  ({ api, key } = await newTenant(t, 'long conversations'));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** A prompt of about `words` tokens, numbered so that each turn's text can be found in a request. */
const prompt = (turn: number, words = 120) => `turn ${turn}: ${'lorem '.repeat(words)}`;

it('lists the model with its window and output limit', async () => {
  const models = (await api.get('/v1/models')).body.data as Array<Record<string, unknown>>;
  expect(models.find((m) => m.id === MODEL)).toMatchObject({
    contextWindow: WINDOW,
    maxOutputTokens: MAX_OUTPUT,
  });
});

it('truncate: a conversation many windows long keeps every request inside the window', async () => {
  const id = (
    await api.post('/v1/sessions', {
      model: MODEL,
      system: 'Be brief.',
      opts: { context: { strategy: 'truncate' } },
    })
  ).body.id as string;
  const turns = 30;
  const first = fake.requests.length;
  for (let turn = 1; turn <= turns; turn++) {
    fake.enqueue({
      text: [`reply ${turn}: `, 'ipsum '.repeat(40)],
      usage: { inputTokens: 10, outputTokens: 40 },
    });
    const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true });
    expect({ turn, status: res.body.status }).toEqual({ turn, status: 'completed' });
  }
  const requests = fake.requests.slice(first);
  expect(requests).toHaveLength(turns);
  // Counted by the tokenizer alone (o200k_base, as for the mocks; Canopy's count for this provider adds a margin
  // and overheads, so it is the larger).
  const exact = tokenCounterFor('mock:echo');
  const sizes = requests.map((r) => exact.text(sentTexts(r.body).join('\n')));
  expect(Math.max(...sizes)).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
  requests.forEach((r, i) => {
    const texts = sentTexts(r.body);
    expect(texts[0]).toBe('Be brief.');
    expect(texts.at(-1)).toContain(`turn ${i + 1}:`);
  });
  // The conversation outgrew the window: the last request left the first turns out, whole (no reply without its
  // prompt: after the system prompt comes a user message).
  const last = requests.at(-1)!.body.messages as Array<{ role: string; content: unknown }>;
  expect(JSON.stringify(last)).not.toContain('turn 1:');
  expect(last[1]!.role).toBe('user');
  expect(sizes.at(-1)!).toBeGreaterThan((WINDOW - MAX_OUTPUT) / 2);

  // What the next run would send: the same cut, with each message's tokens.
  const view = (await api.get(`/v1/sessions/${id}/context`)).body;
  expect(view).toMatchObject({
    strategy: 'truncate',
    window: WINDOW,
    reserveOutputTokens: MAX_OUTPUT,
    fits: true,
  });
  expect(view.tokens).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
  expect(view.dropped).toBeGreaterThan(0);
  expect(view.summary).toBeNull();
  const tree = (await api.get(`/v1/sessions/${id}/tree`)).body;
  expect(view.nodeId).toBe(tree.head);
  expect(view.messages.at(-1).nodeId).toBe(tree.head);
  expect(view.dropped + view.messages.length).toBe(tree.path.length);
  // The tree keeps every message: nothing was deleted.
  expect(tree.nodes).toHaveLength(turns * 2);
  // From an earlier node: the path up to it, whole while it fits.
  const early = (await api.get(`/v1/sessions/${id}/context?nodeId=4`)).body;
  expect(early).toMatchObject({ nodeId: 4, dropped: 0, fits: true });
  expect(early.messages.map((m: { nodeId: number }) => m.nodeId)).toEqual([1, 2, 3, 4]);
});

it('none (the default): a request over the window fails before any provider call, with its figures', async () => {
  const id = (await api.post('/v1/sessions', { model: MODEL })).body.id as string;
  const before = fake.requests.length;
  const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(1, 3_000), wait: true });
  expect(res.status).toBe(200);
  expect(res.body).toMatchObject({
    status: 'error',
    isError: true,
    error: { code: 'context_length_exceeded', details: { window: WINDOW } },
  });
  expect(res.body.error.details.tokens).toBeGreaterThan(WINDOW - MAX_OUTPUT);
  expect(fake.requests.length).toBe(before);
  // The run's record says the same; nothing was committed.
  const run = (await api.get(`/v1/runs/${res.body.runId as string}`)).body;
  expect(run.error).toMatchObject({ code: 'context_length_exceeded', details: { window: WINDOW } });
  expect((await api.get(`/v1/sessions/${id}/tree`)).body.nodes).toHaveLength(0);
  // The JSON form carries it too.
  const json = await api.post(`/v1/sessions/${id}/prompt`, {
    content: prompt(2, 3_000),
    wait: true,
    format: 'json',
  });
  expect(json.body).toMatchObject({ is_error: true, error: { code: 'context_length_exceeded' } });
});

it('maps a provider’s own “too long” answer to context_length_exceeded', async () => {
  const id = (await api.post('/v1/sessions', { model: MODEL })).body.id as string;
  fake.enqueue({
    status: 400,
    message: "This model's maximum context length is 2000 tokens. However, you requested 2300 tokens.",
  });
  const res = await api.post(`/v1/sessions/${id}/prompt`, { content: 'hello', wait: true });
  expect(res.body).toMatchObject({ status: 'error', error: { code: 'context_length_exceeded' } });
  expect(res.body.error.details.window).toBe(WINDOW);
});

describe.each(['postgres', 'embedded'] as const)('summarize on %s', (runtime) => {
  let app: TestApp;
  let rapi: Api;
  let rkey: string;
  let dataDir: string | null = null;

  beforeAll(async () => {
    if (runtime === 'postgres') {
      [app, rapi, rkey] = [t, api, key];
      return;
    }
    dataDir = mkdtempSync(join(tmpdir(), 'canopy-context-'));
    app = await startTestApp({ embeddedDataDir: dataDir, env: ENV });
    ({ api: rapi, key: rkey } = await newTenant(app, 'long conversations, embedded'));
  });

  afterAll(async () => {
    if (runtime === 'embedded') await app?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const mainCalls = (from: number) => mainCallsOf(fake, from);
  const summaryCalls = (from: number) => summaryCallsOf(fake, from);

  // Summaries name the last turn they cover; a turn's reply is 40 words.
  beforeAll(() => answerWithSummaries(fake, 40, 500));
  afterAll(() => fake.respondWith(null));

  const converse = async (id: string, turns: number, from = 1) => {
    const runs: string[] = [];
    for (let turn = from; turn < from + turns; turn++) {
      const res = await rapi.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true });
      expect({ turn, status: res.body.status }).toEqual({ turn, status: 'completed' });
      runs.push(res.body.runId as string);
    }
    return runs;
  };

  it('summarizes the oldest turns, rolling, with every request inside the window; the summary’s usage counts in its run', async () => {
    const id = (
      await rapi.post('/v1/sessions', {
        model: MODEL,
        system: 'Be brief.',
        opts: { context: { strategy: 'summarize' } },
      })
    ).body.id as string;
    const first = fake.requests.length;
    const sse = await SseReader.open(`${app.url}/v1/sessions/${id}/events`, {
      authorization: `Bearer ${rkey}`,
    });
    const runs = await converse(id, 24);
    const summaries = summaryCalls(first);
    const main = mainCalls(first);
    expect(main).toHaveLength(24);
    // Rolling: more than one summary, each after the first given the one before it.
    expect(summaries.length).toBeGreaterThan(1);
    expect(sentTexts(summaries[1]!.body).join('\n')).toContain('Earlier summary:\nSUMMARY through turn');
    const exact = tokenCounterFor('mock:echo');
    for (const r of main)
      expect(exact.text(sentTexts(r.body).join('\n'))).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
    // The last request: the system prompt with the latest summary, then the turns after it, the first gone.
    const last = sentTexts(main.at(-1)!.body);
    expect(last[0]).toContain('Be brief.');
    const through = Number(/SUMMARY through turn (\d+)/.exec(last[0]!)?.[1]);
    expect(through).toBeGreaterThan(1);
    expect(turnsIn(main.at(-1)!.body)[0]).toBe(through + 1);
    expect(turnsIn(main.at(-1)!.body).at(-1)).toBe(24);
    // A run that summarized counts the summarizing call's usage (500 input tokens) with its own.
    const usages = await Promise.all(
      runs.map(async (r) => (await rapi.get(`/v1/runs/${r}`)).body.usage.inputTokens as number),
    );
    expect(usages.filter((u) => u >= 500)).toHaveLength(summaries.length);
    // Each summary is announced and then said done, with the node it covers from then on.
    const done = await sse.waitFor(
      (e) =>
        e.event === 'context' && e.data.kind === 'summarized' && e.data.summarizedThrough === through * 2,
    );
    sse.close();
    const contextEvents = sse.events.filter((e) => e.event === 'context' && e.data.kind !== 'meter');
    expect(contextEvents.filter((e) => e.data.kind === 'summarizing')).toHaveLength(summaries.length);
    expect(contextEvents.filter((e) => e.data.kind === 'summarized')).toHaveLength(summaries.length);
    expect(done.data).toMatchObject({ strategy: 'summarize', window: WINDOW, runId: expect.any(String) });
    expect(done.data.tokens).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);

    // GET …/context shows the summary in use and the turns after it.
    const view = (await rapi.get(`/v1/sessions/${id}/context`)).body;
    expect(view).toMatchObject({
      strategy: 'summarize',
      fits: true,
      summary: { text: `SUMMARY through turn ${through}` },
    });
    const tree = (await rapi.get(`/v1/sessions/${id}/tree`)).body;
    // Turn t is nodes 2t-1 (prompt) and 2t (reply): the summary covers through the reply of turn `through`.
    expect(view.summary.throughNodeId).toBe(through * 2);
    expect(view.messages[0].nodeId).toBe(through * 2 + 1);
    expect(tree.nodes).toHaveLength(48);
    // The session's meter counts with the summary in use and names the node it covers.
    await eventually(async () =>
      expect((await rapi.get(`/v1/sessions/${id}`)).body.context).toEqual({
        tokens: view.tokens,
        window: WINDOW,
        strategy: 'summarize',
        summarizedThrough: through * 2,
      }),
    );

    // A regeneration below the summary reuses it: no new summary, the summary sent.
    const before = fake.requests.length;
    const regen = await rapi.post(`/v1/sessions/${id}/branch`, { nodeId: 47, wait: true });
    expect(regen.body.status).toBe('completed');
    expect(summaryCalls(before)).toHaveLength(0);
    expect(sentTexts(mainCalls(before)[0]!.body)[0]).toContain(`SUMMARY through turn ${through}`);
    // An edit above it (turn 2's prompt, attached after turn 1's reply) leaves the path the summary covers: it is
    // never sent there.
    const edit = await rapi.post(`/v1/sessions/${id}/branch`, { nodeId: 2, content: prompt(99), wait: true });
    expect(edit.body.status).toBe('completed');
    expect(JSON.stringify(mainCalls(before)[1]!.body)).not.toContain('SUMMARY');
    expect((await rapi.get(`/v1/sessions/${id}/context`)).body.summary).toBeNull();
  });

  it('a cancel stops a summary under way: the run is cancelled, nothing is stored', async () => {
    const id = (
      await rapi.post('/v1/sessions', { model: MODEL, opts: { context: { strategy: 'summarize' } } })
    ).body.id as string;
    const first = fake.requests.length;
    await converse(id, 7);
    expect(summaryCalls(first)).toHaveLength(0);
    // The next turn summarizes, slowly: cancelled once the summarizing call reached the provider.
    fake.respondWith((request) =>
      isSummaryCall(request.body)
        ? { text: ['SUMMARY', ' never', ' finished'], eventDelayMs: 10_000 }
        : { text: ['reply: ', 'ipsum '.repeat(40)], usage: { inputTokens: 10, outputTokens: 40 } },
    );
    const started = await rapi.post(`/v1/sessions/${id}/prompt`, { content: prompt(8) });
    await eventually(() => expect(summaryCalls(first)).toHaveLength(1));
    expect((await rapi.post(`/v1/sessions/${id}/cancel`)).status).toBe(200);
    await eventually(async () =>
      expect((await rapi.get(`/v1/runs/${started.body.runId as string}`)).body.status).toBe('cancelled'),
    );
    expect(mainCalls(first)).toHaveLength(7);
    expect((await rapi.get(`/v1/sessions/${id}/context`)).body.summary).toBeNull();
  });

  it('summarizes a prefix once for every branch below it; the summary’s tokens count in the quotas', async () => {
    const tenant = await newTenant(app, `summary quotas, ${runtime}`);
    const admin = new Api(app.url, TEST_ADMIN_KEY);
    const setQuota = (limit: number) =>
      admin.request('PUT', `/v1/admin/tenants/${tenant.tenantId}/quotas`, {
        quotas: [{ metric: 'tokens', period: 'day', limit }],
      });
    expect((await setQuota(1_000_000)).status).toBe(200);
    const used = async () => (await tenant.api.get('/v1/quotas')).body.tenant[0].usage as number;
    const id = (
      await tenant.api.post('/v1/sessions', { model: MODEL, opts: { context: { strategy: 'summarize' } } })
    ).body.id as string;
    for (let turn = 1; turn <= 7; turn++)
      expect(
        (await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true })).status,
      ).toBe(200);
    const first = fake.requests.length;
    expect(summaryCalls(first)).toHaveLength(0);
    const before = await used();

    // Turn 8 summarizes; its summarizing call is held at the provider while a run on another branch below the
    // same prefix (a regeneration of turn 7's reply) is asked for: the session runs one run at a time, so it is
    // refused, never a second summary of the prefix.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    fake.respondWith((request) =>
      isSummaryCall(request.body)
        ? {
            text: [`SUMMARY through turn ${Math.max(...turnsIn(request.body))}`],
            usage: { inputTokens: 500, outputTokens: 9 },
            hold: held,
          }
        : { text: ['reply: ', 'ipsum '.repeat(40)], usage: { inputTokens: 10, outputTokens: 40 } },
    );
    try {
      const started = await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: prompt(8) });
      await eventually(() => expect(summaryCalls(first)).toHaveLength(1));
      const meanwhile = await tenant.api.post(`/v1/sessions/${id}/branch`, { nodeId: 13 });
      expect({ status: meanwhile.status, code: meanwhile.body.error?.code }).toEqual({
        status: 409,
        code: 'session_busy',
      });
      release();
      await eventually(async () =>
        expect((await tenant.api.get(`/v1/runs/${started.body.runId as string}`)).body.status).toBe(
          'completed',
        ),
      );
      // A regeneration on another branch below the node the summary covers (the reply to the prompt after it),
      // once free to run, sends the summary turn 8's run stored: no second summarizing call.
      const through = (await tenant.api.get(`/v1/sessions/${id}/context`)).body.summary.throughNodeId as number;
      expect(through % 2).toBe(0);
      const regen = await tenant.api.post(`/v1/sessions/${id}/branch`, { nodeId: through + 1, wait: true });
      expect(regen.body.status).toBe('completed');
      expect(summaryCalls(first)).toHaveLength(1);
      const regenCall = mainCalls(first).at(-1)!;
      expect(sentTexts(regenCall.body)[0]).toContain(`SUMMARY through turn ${through / 2}`);
      expect(turnsIn(regenCall.body)).toEqual([(through + 2) / 2]);

      // The tenant's token quota counts both runs whole, the summarizing call's 509 tokens with them.
      const runUsage = async (runId: string) => {
        const u = (await tenant.api.get(`/v1/runs/${runId}`)).body.usage;
        return (u.inputTokens as number) + (u.outputTokens as number);
      };
      const summarized = await runUsage(started.body.runId as string);
      expect(summarized).toBe(10 + 40 + 500 + 9);
      const total = summarized + (await runUsage(regen.body.runId as string));
      await eventually(async () => expect(await used()).toBe(before + total));
      // Over it now: the next prompt is refused with the usage that includes the summary.
      expect((await setQuota(before + total)).status).toBe(200);
      const over = await tenant.api.post(`/v1/sessions/${id}/prompt`, { content: prompt(9), wait: true });
      expect({
        status: over.status,
        code: over.body.error?.code,
        usage: over.body.error?.details?.usage,
      }).toEqual({
        status: 429,
        code: 'quota_exceeded',
        usage: before + total,
      });
    } finally {
      release();
      answerWithSummaries(fake, 40, 500);
    }
  });

  it('truncates when the summary fails, and says so', async () => {
    const id = (
      await rapi.post('/v1/sessions', { model: MODEL, opts: { context: { strategy: 'summarize' } } })
    ).body.id as string;
    fake.respondWith((request) =>
      isSummaryCall(request.body)
        ? { status: 400, message: 'summaries are off today' }
        : { text: ['reply: ', 'ipsum '.repeat(40)], usage: { inputTokens: 10, outputTokens: 40 } },
    );
    const first = fake.requests.length;
    await converse(id, 14);
    expect(summaryCalls(first).length).toBeGreaterThan(0);
    const exact = tokenCounterFor('mock:echo');
    for (const r of mainCalls(first)) {
      expect(exact.text(sentTexts(r.body).join('\n'))).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
      expect(JSON.stringify(r.body)).not.toContain('SUMMARY');
    }
    expect(turnsIn(mainCalls(first).at(-1)!.body)[0]).toBeGreaterThan(1);
    expect((await rapi.get(`/v1/sessions/${id}/context`)).body).toMatchObject({ summary: null, fits: true });
  });
});

it('checks opts.context and the mocks’ windows, and answers the context of a mock session', async () => {
  const bad = await api.post('/v1/sessions', {
    model: 'mock:echo',
    opts: { context: { strategy: 'forget' } },
  });
  expect(bad.status).toBe(400);
  expect(bad.body.error.details.field).toBe('opts.context.strategy');
  const extra = await api.post('/v1/sessions', {
    model: 'mock:echo',
    opts: { context: { strategy: 'none', later: true } },
  });
  expect(extra.status).toBe(400);
  const badSummarizer = await api.post('/v1/sessions', {
    model: 'mock:echo',
    opts: { context: { strategy: 'summarize', summaryModel: 'nowhere:model' } },
  });
  expect(badSummarizer.status).toBe(400);
  expect(badSummarizer.body.error.details.field).toBe('opts.context.summaryModel');
  const badWindow = await api.post('/v1/sessions', { model: 'mock:echo', opts: { contextWindow: -3 } });
  expect(badWindow.body.error.details.field).toBe('opts.contextWindow');

  const id = (await api.post('/v1/sessions', { model: 'mock:echo', opts: { contextWindow: 4_000 } })).body
    .id as string;
  const empty = (await api.get(`/v1/sessions/${id}/context`)).body;
  expect(empty).toMatchObject({ nodeId: null, strategy: 'none', window: 4_000, dropped: 0, messages: [] });
  await api.post(`/v1/sessions/${id}/prompt`, { content: 'hello there', wait: true });
  const view = (await api.get(`/v1/sessions/${id}/context`)).body;
  expect(view.messages.map((m: { role: string }) => m.role)).toEqual(['user', 'assistant']);
  expect(view.tokens).toBe(view.messages.reduce((sum: number, m: { tokens: number }) => sum + m.tokens, 0));

  expect((await api.get(`/v1/sessions/${id}/context?nodeId=99`)).body.error.code).toBe('not_found');
  expect((await api.get(`/v1/sessions/${id}/context?nodeId=first`)).status).toBe(400);
  const stranger = (await newTenant(t, 'context stranger')).api;
  expect((await stranger.get(`/v1/sessions/${id}/context`)).body.error.code).toBe('not_found');
});

it('meters the context after each run: a `context` event, kept for GET /v1/sessions/:id, the list and the snapshot', async () => {
  const id = (await api.post('/v1/sessions', { model: MODEL, system: 'Be brief.' })).body.id as string;
  expect((await api.get(`/v1/sessions/${id}`)).body.context).toBeNull();
  const auth = { authorization: `Bearer ${api.credential!}` };
  const events = await SseReader.open(`${api.baseUrl}/v1/sessions/${id}/events`, auth);
  const meterOf = async (runId: string): Promise<{ tokens: number }> =>
    (await events.waitFor((e) => e.event === 'context' && e.data.runId === runId)).data as { tokens: number };
  try {
    fake.enqueue({ text: ['a short reply'], usage: { inputTokens: 10, outputTokens: 3 } });
    const done = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(1, 50), wait: true });
    expect(done.body.status).toBe('completed');
    const meter = await meterOf(done.body.runId as string);
    // What the next run from the new head would send, as GET …/context counts it.
    const view = (await api.get(`/v1/sessions/${id}/context`)).body;
    expect(view.messages).toHaveLength(2);
    const expected = { tokens: view.tokens, window: WINDOW, strategy: 'none', summarizedThrough: null };
    expect(meter).toEqual({ runId: done.body.runId, kind: 'meter', ...expected });
    // After the commit's events, and kept before it was published.
    const types = events.events.map((e) => e.event);
    expect(types.lastIndexOf('context')).toBeGreaterThan(types.lastIndexOf('tree'));
    expect((await api.get(`/v1/sessions/${id}`)).body.context).toEqual(expected);

    // A failed run (over the window: nothing committed) meters the same context under its own run id.
    const failed = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(2, 3_000), wait: true });
    expect(failed.body.error.code).toBe('context_length_exceeded');
    expect(await meterOf(failed.body.runId as string)).toEqual({
      runId: failed.body.runId,
      kind: 'meter',
      ...expected,
    });

    // A second completed run: the meter grows by its prompt and reply.
    fake.enqueue({ text: ['another reply'], usage: { inputTokens: 10, outputTokens: 3 } });
    const next = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(3, 50), wait: true });
    const grown = await meterOf(next.body.runId as string);
    expect(grown.tokens).toBe((await api.get(`/v1/sessions/${id}/context`)).body.tokens);
    expect(grown.tokens).toBeGreaterThan(expected.tokens + 50);
    const latest = { ...expected, tokens: grown.tokens };
    expect((await api.get(`/v1/sessions/${id}`)).body.context).toEqual(latest);

    // A new subscriber's snapshot carries it, and so does the session list.
    const joined = await SseReader.open(`${api.baseUrl}/v1/sessions/${id}/events?mode=observer`, auth);
    try {
      expect((await joined.waitFor((e) => e.event === 'snapshot')).data.session.context).toEqual(latest);
    } finally {
      joined.close();
    }
    const listed = (await api.get('/v1/sessions?limit=100')).body.data as Array<{ id: string }>;
    expect(listed.find((s) => s.id === id)).toMatchObject({ context: latest });
    // Another tenant sees none of it.
    const stranger = (await newTenant(t, 'meter stranger')).api;
    expect((await stranger.get(`/v1/sessions/${id}`)).status).toBe(404);
  } finally {
    events.close();
  }
});
