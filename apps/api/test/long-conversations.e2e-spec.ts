// Conversations hundreds of turns long on a 4,000-token window, over HTTP against the local fake provider (which
// records every request), on both runtimes: under `truncate` and `summarize` every request stays inside the window
// however long the path grows (past the length a run reads whole: each run reads what it sends), a regeneration far
// up the tree reuses the summary of its path, `none` ends the runs over the window before any provider call, and a
// provider reporting more input tokens than Canopy counted raises later counts (the meter says by how much).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tokenCounterFor } from '@canopy/agent';
import { eventually, FakeLlmServer, type FakeRequest } from '@canopy/testing';
import { newTenant, type Api } from './support/api-client';
import {
  answerWithSummaries,
  fakeProviderEnv,
  mainCalls as mainCallsOf,
  sentTexts,
  summaryCalls as summaryCallsOf,
  turnsIn,
} from './support/long-context';
import { startTestApp, type TestApp } from './support/test-app';

const WINDOW = 4_000;
const MAX_OUTPUT = 400;
const MODEL = 'openai-compatible:long';

let fake: FakeLlmServer;
let ENV: Record<string, string>;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  ENV = fakeProviderEnv(fake, { name: 'long', window: WINDOW, maxOutput: MAX_OUTPUT });
  answerWithSummaries(fake, 20, 900);
});

afterAll(async () => {
  await fake?.close();
});

/** A prompt of some 40 tokens, numbered so that each turn can be found in a request. */
const prompt = (turn: number) => `turn ${turn}: ${'lorem '.repeat(36)}`;
const mainCalls = (from: number) => mainCallsOf(fake, from);
const summaryCalls = (from: number) => summaryCallsOf(fake, from);
/** A request's size by the tokenizer alone (Canopy's count for this provider adds a margin: it is the larger). */
const exact = tokenCounterFor('mock:echo');
const sizeOf = (r: FakeRequest) => exact.text(sentTexts(r.body).join('\n'));

describe.each(['postgres', 'embedded'] as const)('on %s', (runtime) => {
  let app: TestApp;
  let api: Api;
  let dataDir: string | null = null;
  // The 300-turn conversations run on one runtime each (a long suite otherwise); the other one goes 120 turns, still
  // past the path length a run reads whole.
  const turnsFor = (strategy: 'truncate' | 'summarize') =>
    (strategy === 'truncate') === (runtime === 'postgres') ? 300 : 120;

  beforeAll(async () => {
    if (runtime === 'embedded') dataDir = mkdtempSync(join(tmpdir(), 'canopy-long-'));
    app = await startTestApp({ env: ENV, ...(dataDir ? { embeddedDataDir: dataDir } : {}) });
    ({ api } = await newTenant(app, `long conversations on ${runtime}`));
  });

  afterAll(async () => {
    await app?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  const newSession = async (context: Record<string, unknown>) =>
    (await api.post('/v1/sessions', { model: MODEL, system: 'Be brief.', opts: { context } })).body
      .id as string;

  const converse = async (id: string, turns: number) => {
    for (let turn = 1; turn <= turns; turn++) {
      const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true });
      expect({ turn, status: res.body.status, error: res.body.error }).toEqual({
        turn,
        status: 'completed',
        error: undefined,
      });
    }
  };

  it('truncate: every request of a conversation hundreds of turns long stays inside the window', async () => {
    const turns = turnsFor('truncate');
    const id = await newSession({ strategy: 'truncate', keepFirstTurns: 1 });
    const first = fake.requests.length;
    await converse(id, turns);
    const requests = mainCalls(first);
    expect(requests).toHaveLength(turns);
    expect(Math.max(...requests.map(sizeOf))).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
    // Late requests: the kept first turn, then the newest turns whole up to the prompt, and as full as the window
    // allows (the run read enough of the path to fill it).
    const last = requests.at(-1)!;
    const sent = turnsIn(last.body);
    expect(sent[0]).toBe(1);
    expect(sent.at(-1)).toBe(turns);
    expect(sent.slice(1)).toEqual(
      Array.from({ length: sent.length - 1 }, (_, i) => turns - sent.length + 2 + i),
    );
    expect(sizeOf(last)).toBeGreaterThan((WINDOW - MAX_OUTPUT) * 0.7);
    // The tree keeps every message.
    const tree = (await api.get(`/v1/sessions/${id}/tree`)).body;
    expect(tree.path).toHaveLength(turns * 2);
    // The meter, counted from what the last run read, matches what the next run would send.
    const view = (await api.get(`/v1/sessions/${id}/context`)).body;
    await eventually(async () =>
      expect((await api.get(`/v1/sessions/${id}`)).body.context).toMatchObject({
        tokens: view.tokens,
        window: WINDOW,
        strategy: 'truncate',
      }),
    );
  });

  it('summarize: every request stays inside the window; a regeneration far up the tree reuses its path’s summary', async () => {
    const turns = turnsFor('summarize');
    const id = await newSession({ strategy: 'summarize' });
    const first = fake.requests.length;
    await converse(id, turns);
    const main = mainCalls(first);
    const summaries = summaryCalls(first);
    expect(main).toHaveLength(turns);
    expect(summaries.length).toBeGreaterThan(2);
    for (const r of [...main, ...summaries]) expect(sizeOf(r)).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
    const last = sentTexts(main.at(-1)!.body);
    const through = Number(/SUMMARY through turn (\d+)/.exec(last[0]!)?.[1]);
    expect(turnsIn(main.at(-1)!.body)[0]).toBe(through + 1);
    expect(turnsIn(main.at(-1)!.body).at(-1)).toBe(turns);

    // Regenerate the reply of a turn far up: its path holds an older summary, which the run sends; nothing is
    // summarized again.
    const far = Math.floor(turns / 2);
    const before = fake.requests.length;
    const regen = await api.post(`/v1/sessions/${id}/branch`, { nodeId: far * 2 - 1, wait: true });
    expect(regen.body.status).toBe('completed');
    expect(summaryCalls(before)).toHaveLength(0);
    const request = mainCalls(before)[0]!;
    const used = Number(/SUMMARY through turn (\d+)/.exec(sentTexts(request.body)[0]!)?.[1]);
    expect(used).toBeLessThan(far);
    expect(turnsIn(request.body)[0]).toBe(used + 1);
    expect(turnsIn(request.body).at(-1)).toBe(far);
    expect(sizeOf(request)).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
  });

  it('none: once the path is over the window, runs end with context_length_exceeded before any provider call', async () => {
    const id = await newSession({ strategy: 'none' });
    const first = fake.requests.length;
    let turn = 0;
    let failed: Record<string, unknown> | null = null;
    while (failed === null && turn < 200) {
      turn++;
      const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true });
      if (res.body.status === 'error') failed = res.body;
    }
    expect(failed).toMatchObject({ error: { code: 'context_length_exceeded' } });
    const details = (failed!.error as { details: { tokens: number; window: number } }).details;
    expect(details.window).toBe(WINDOW);
    expect(details.tokens).toBeGreaterThan(WINDOW - MAX_OUTPUT);
    // The failing run sent nothing; every request sent was inside the window.
    const requests = mainCalls(first);
    expect(requests).toHaveLength(turn - 1);
    expect(Math.max(...requests.map(sizeOf))).toBeLessThanOrEqual(WINDOW - MAX_OUTPUT);
  });
});

describe('calibration', () => {
  let app: TestApp;
  let api: Api;

  beforeAll(async () => {
    app = await startTestApp({ env: ENV });
    ({ api } = await newTenant(app, 'calibrated counts'));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('takes a provider’s reported input tokens over Canopy’s count: later requests are cut to the raised counts', async () => {
    const id = (
      await api.post('/v1/sessions', {
        model: MODEL,
        system: 'Be brief.',
        opts: { context: { strategy: 'truncate' } },
      })
    ).body.id as string;
    // 25 turns of some 70 tokens each: ~1,900 tokens, inside the window as Canopy counts them.
    for (let turn = 1; turn <= 25; turn++) {
      const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true });
      expect(res.body.status).toBe('completed');
    }
    const plain = (await api.get(`/v1/sessions/${id}`)).body.context;
    expect(plain.calibration).toBeUndefined();
    // The provider now reports three times what it was sent (by the tokenizer): Canopy takes it at most twice.
    const first = fake.requests.length;
    fake.enqueue({
      text: ['counted short'],
      usage: { inputTokens: 3 * 2_000, outputTokens: 2 },
    });
    expect(
      (await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(26), wait: true })).body.status,
    ).toBe('completed');
    await eventually(async () =>
      expect((await api.get(`/v1/sessions/${id}`)).body.context.calibration).toBeGreaterThan(1),
    );
    const calibration = (await api.get(`/v1/sessions/${id}`)).body.context.calibration as number;
    expect(calibration).toBeLessThanOrEqual(2);
    // The next run counts at the raised figures: its request leaves out turns the one before sent.
    const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(27), wait: true });
    expect(res.body.status).toBe('completed');
    const [calibrated, next] = mainCalls(first);
    expect(turnsIn(calibrated!.body)[0]).toBe(1);
    expect(turnsIn(next!.body)[0]).toBeGreaterThan(1);
    expect(sizeOf(next!) * calibration).toBeLessThanOrEqual((WINDOW - MAX_OUTPUT) * 1.05);
  });
});
