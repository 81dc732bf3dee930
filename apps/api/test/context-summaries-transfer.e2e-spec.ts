// A long conversation's context summaries travel with the nodes they cover, over HTTP on both runtimes (the local
// fake provider records every request): a fork keeps the summary of the path it takes (against its own node ids),
// a canopy export carries it and an import restores it, so GET …/context of the new session shows the same summary
// and its next run sends it without summarizing again.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeLlmServer } from '@canopy/testing';
import { newTenant, type Api } from './support/api-client';
import {
  answerWithSummaries,
  fakeProviderEnv,
  mainCalls as mainCallsOf,
  sentTexts,
  summaryCalls as summaryCallsOf,
} from './support/long-context';
import { startTestApp, type TestApp } from './support/test-app';

const WINDOW = 2_000;
const MAX_OUTPUT = 256;
const MODEL = 'openai-compatible:small';

let fake: FakeLlmServer;
let ENV: Record<string, string>;

beforeAll(async () => {
  fake = await FakeLlmServer.start();
  ENV = fakeProviderEnv(fake, { name: 'small', window: WINDOW, maxOutput: MAX_OUTPUT });
  // Summaries name the last turn they cover; a turn's reply is 40 words.
  answerWithSummaries(fake, 40, 500);
});

afterAll(async () => {
  await fake?.close();
});

/** A prompt of about `words` tokens, numbered so that each turn's text can be found in a request. */
const prompt = (turn: number, words = 120) => `turn ${turn}: ${'lorem '.repeat(words)}`;

const summaryCalls = (from: number) => summaryCallsOf(fake, from);
const mainCalls = (from: number) => mainCallsOf(fake, from);

describe.each(['postgres', 'embedded'] as const)('on %s', (runtime) => {
  let app: TestApp;
  let api: Api;
  let other: Api;
  let dataDir: string | null = null;

  beforeAll(async () => {
    if (runtime === 'embedded') dataDir = mkdtempSync(join(tmpdir(), 'canopy-summaries-'));
    app = await startTestApp({ env: ENV, ...(dataDir ? { embeddedDataDir: dataDir } : {}) });
    ({ api } = await newTenant(app, 'summaries'));
    ({ api: other } = await newTenant(app, 'summaries, imported'));
  });

  afterAll(async () => {
    await app?.close();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  /** The session's last prompt on its active path: a regeneration of it sends what its run sent. */
  const lastPrompt = async (client: Api, id: string): Promise<number> => {
    const tree = (await client.get(`/v1/sessions/${id}/tree`)).body;
    const roles = new Map<number, string>(
      tree.nodes.map((n: { id: number; message: { role: string } }) => [n.id, n.message.role]),
    );
    return (tree.path as number[]).filter((n) => roles.get(n) === 'user').at(-1)!;
  };

  /** Regenerates the last reply: no new summary, and the request carries `summary`. */
  const regenerates = async (client: Api, id: string, summary: string) => {
    const before = fake.requests.length;
    const res = await client.post(`/v1/sessions/${id}/branch`, {
      nodeId: await lastPrompt(client, id),
      wait: true,
    });
    expect(res.body.status).toBe('completed');
    expect(summaryCalls(before)).toHaveLength(0);
    const sent = mainCalls(before);
    expect(sent).toHaveLength(1);
    expect(sentTexts(sent[0]!.body)[0]).toContain(summary);
  };

  it('a fork, and an export imported elsewhere, keep the summary and send it without summarizing again', async () => {
    const id = (
      await api.post('/v1/sessions', {
        model: MODEL,
        system: 'Be brief.',
        opts: { context: { strategy: 'summarize' } },
      })
    ).body.id as string;
    // Turn 1 answered twice (a regeneration): the active path leaves node 2 out, so a fork renumbers the nodes.
    expect(
      (await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(1), wait: true })).body.status,
    ).toBe('completed');
    expect((await api.post(`/v1/sessions/${id}/branch`, { nodeId: 1, wait: true })).body.status).toBe(
      'completed',
    );
    const first = fake.requests.length;
    for (let turn = 2; turn <= 12; turn++) {
      const res = await api.post(`/v1/sessions/${id}/prompt`, { content: prompt(turn), wait: true });
      expect({ turn, status: res.body.status }).toEqual({ turn, status: 'completed' });
    }
    expect(summaryCalls(first).length).toBeGreaterThan(0);
    const view = (await api.get(`/v1/sessions/${id}/context`)).body;
    expect(view.summary).toMatchObject({ text: expect.stringMatching(/^SUMMARY through turn \d+$/) });
    const { text, tokens, throughNodeId } = view.summary as {
      text: string;
      tokens: number;
      throughNodeId: number;
    };
    expect(throughNodeId).toBeGreaterThan(2);

    // Fork at the tip: the same summary, against the fork's id of the node (one less: node 2 is not on the path).
    const fork = await api.post(`/v1/sessions/${id}/fork`, {});
    expect(fork.status).toBe(201);
    const forkView = (await api.get(`/v1/sessions/${fork.body.id as string}/context`)).body;
    expect(forkView.summary).toEqual({ text, tokens, throughNodeId: throughNodeId - 1 });
    expect(forkView.tokens).toBe(view.tokens);
    expect(forkView.messages.map((m: { nodeId: number }) => m.nodeId + 1)).toEqual(
      view.messages.map((m: { nodeId: number }) => m.nodeId),
    );
    await regenerates(api, fork.body.id as string, text);
    // A fork above the summary's node has none.
    const early = await api.post(`/v1/sessions/${id}/fork`, { nodeId: 3 });
    expect((await api.get(`/v1/sessions/${early.body.id as string}/context`)).body.summary).toBeNull();

    // Export (canopy): the summary with the model and usage that wrote it; import into another tenant.
    const exported = (await api.get(`/v1/sessions/${id}/export?format=canopy`)).body;
    expect(exported.summaries).toContainEqual({
      throughNodeId,
      text,
      tokens,
      model: MODEL,
      usage: expect.objectContaining({ inputTokens: 500, outputTokens: 9 }),
    });
    const imported = await other.post('/v1/sessions/import', { format: 'canopy', data: exported });
    expect(imported.status).toBe(201);
    expect((await other.get(`/v1/sessions/${id}/context`)).body).toEqual(view);
    expect((await other.get(`/v1/sessions/${id}/export?format=canopy`)).body).toEqual(exported);
    await regenerates(other, id, text);

    // In bulk too: the NDJSON line carries them, and imports them.
    const res = await fetch(`${app.url}/v1/export`, {
      headers: { authorization: `Bearer ${api.credential}` },
    });
    const line = (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { session: { id: string }; summaries?: unknown[] })
      .find((d) => d.session.id === id)!;
    expect(line.summaries).toEqual(exported.summaries);

    // An older document (no summaries) still imports, with none.
    const { summaries: _dropped, ...older } = exported;
    const plain = await other.post('/v1/sessions/import', {
      format: 'canopy',
      data: { ...older, session: { ...older.session, id: `${id}-plain` } },
    });
    expect(plain.status).toBe(201);
    expect((await other.get(`/v1/sessions/${id}-plain/context`)).body.summary).toBeNull();
  });

  it('refuses a summary of a node the document does not have, naming the field', async () => {
    const res = await api.post('/v1/sessions/import', {
      format: 'canopy',
      data: {
        format: 'canopy',
        version: 1,
        session: {},
        tree: {
          nodes: [{ id: 1, parentId: null, message: { role: 'user', content: [], timestamp: 0 } }],
          path: [1],
          cursors: {},
        },
        summaries: [{ throughNodeId: 9, text: 'so far', tokens: 2, model: MODEL }],
      },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'bad_request',
      details: { field: 'data.summaries[0].throughNodeId' },
    });
  });
});
