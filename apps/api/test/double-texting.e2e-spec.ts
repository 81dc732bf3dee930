// Double texting over HTTP: prompts sent to a busy session with ifBusy `enqueue` wait their turn first in, first
// out (listed in GET /v1/sessions/:id as `queued`, cancellable by id), `interrupt` cancels the run in flight and
// goes next, `rollback` cancels it and goes where its prompt was attached (the cancelled run's messages leave the
// active path, kept in the tree). Runs of one session never overlap.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies */

import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let api: Api;

beforeAll(async () => {
  t = await startTestApp();
  ({ api } = await newTenant(t, 'double texting'));
});

afterAll(async () => {
  await t?.close();
});

interface Run {
  id: string;
  status: string;
  startedAt: string | null;
  finishedAt: string | null;
}

const run = async (runId: string): Promise<Run> => (await api.get(`/v1/runs/${runId}`)).body as Run;

/** The text of a message's content (a string, or its text blocks). */
function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  return (content as Array<{ type: string; text?: string }>)
    .filter((b) => b.type === 'text')
    .map((b) => b.text)
    .join('');
}

/** The user prompts' texts along the active path (tool results left out). */
async function promptsOnPath(sessionId: string): Promise<string[]> {
  const tree = (await api.get(`/v1/sessions/${sessionId}/tree`)).body;
  const byId = new Map<number, { message: { role: string; content: unknown } }>(
    tree.nodes.map((n: { id: number }) => [n.id, n]),
  );
  return (tree.path as number[])
    .map((id) => byId.get(id)!)
    .filter((n) => n.message.role === 'user' && textOf(n.message.content) !== '')
    .map((n) => textOf(n.message.content));
}

async function idle(sessionId: string): Promise<void> {
  await eventually(
    async () => {
      const detail = (await api.get(`/v1/sessions/${sessionId}`)).body;
      expect({ status: detail.status, queued: detail.queued }).toEqual({ status: 'idle', queued: [] });
    },
    { timeoutMs: 30_000 },
  );
}

/** A session on the echo model whose runs take a while, its first run in flight. */
async function busySession(): Promise<{ id: string; first: string }> {
  const id = (await api.post('/v1/sessions', { model: 'mock:echo', opts: { delayMs: 1_500 } })).body.id;
  const first = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'first' })).body.runId;
  await eventually(async () => expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('busy'));
  return { id, first };
}

describe('ifBusy: "enqueue"', () => {
  it('queues prompts first in, first out, lists them, cancels one by id, and runs the rest once each', async () => {
    const { id, first } = await busySession();
    const sent: ApiResponse[] = [];
    for (const content of ['q1', 'q2', 'q3']) {
      sent.push(await api.post(`/v1/sessions/${id}/prompt`, { content, ifBusy: 'enqueue' }));
    }
    for (const res of sent) {
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ runId: expect.any(String), queued: true });
    }
    const detail = (await api.get(`/v1/sessions/${id}`)).body;
    expect(
      detail.queued.map((q: { id: string; mode: string; content: unknown }) => [
        q.id,
        q.mode,
        textOf(q.content),
      ]),
    ).toEqual([
      [sent[0]!.body.runId, 'enqueue', 'q1'],
      [sent[1]!.body.runId, 'enqueue', 'q2'],
      [sent[2]!.body.runId, 'enqueue', 'q3'],
    ]);
    // q2 is taken out; a wrong id, or one taken out already, is not found.
    expect((await api.delete(`/v1/sessions/${id}/queue/${sent[1]!.body.runId}`)).status).toBe(204);
    expect((await api.delete(`/v1/sessions/${id}/queue/${sent[1]!.body.runId}`)).body.error.code).toBe(
      'not_found',
    );
    expect((await api.delete(`/v1/sessions/${id}/queue/nope`)).body.error.code).toBe('not_found');

    await idle(id);
    expect(await promptsOnPath(id)).toEqual(['first', 'q1', 'q3']);
    const runs = await Promise.all([first, sent[0]!.body.runId, sent[2]!.body.runId].map(run));
    expect(runs.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);
    // One at a time, in order: each run started after the one before it finished.
    for (let i = 1; i < runs.length; i++) {
      expect(Date.parse(runs[i]!.startedAt!)).toBeGreaterThanOrEqual(Date.parse(runs[i - 1]!.finishedAt!));
    }
    expect((await api.get(`/v1/runs/${sent[1]!.body.runId}`)).status).toBe(404);
  });

  it('starts at once on an idle session (and waits with wait: true)', async () => {
    const id = (await api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    const res = await api.post(`/v1/sessions/${id}/prompt`, { content: 'hi', ifBusy: 'enqueue', wait: true });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', finalResponse: 'Echo: hi' });
    expect((await api.get(`/v1/sessions/${id}`)).body.queued).toEqual([]);
  });
});

describe('ifBusy: "interrupt"', () => {
  it('cancels the run in flight and runs the new prompt next, ahead of the queue', async () => {
    const { id, first } = await busySession();
    const queued = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'waiting', ifBusy: 'enqueue' }))
      .body;
    const interrupting = await api.post(`/v1/sessions/${id}/prompt`, { content: 'now', ifBusy: 'interrupt' });
    expect(interrupting.status).toBe(202);
    await idle(id);
    expect((await run(first)).status).toBe('cancelled');
    const [now, waiting] = await Promise.all([run(interrupting.body.runId), run(queued.runId)]);
    expect([now.status, waiting.status]).toEqual(['completed', 'completed']);
    expect(Date.parse(waiting.startedAt!)).toBeGreaterThanOrEqual(Date.parse(now.finishedAt!));
    expect(await promptsOnPath(id)).toEqual(['now', 'waiting']);
  });
});

describe('ifBusy: "rollback"', () => {
  it('cancels the run in flight and attaches the new prompt where its prompt was: its messages leave the path', async () => {
    // B's run commits its first turn when a steered prompt is staged on it, then waits in the steered turn: a
    // rollback takes all of it off the path.
    const id = (
      await api.post('/v1/sessions', {
        model: 'mock:script',
        opts: { script: [{ text: 'a1' }, { delayMs: 1_500, text: 'b1' }, { delayMs: 60_000, text: 'late' }] },
      })
    ).body.id;
    expect((await api.post(`/v1/sessions/${id}/prompt`, { content: 'A', wait: true })).body.status).toBe(
      'completed',
    );
    const b = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'B' })).body.runId;
    expect((await api.post(`/v1/sessions/${id}/prompt`, { content: 'S', ifBusy: 'steer' })).body.staged).toBe(
      true,
    );
    await eventually(async () => expect((await promptsOnPath(id)).slice(0, 2)).toEqual(['A', 'B']), {
      timeoutMs: 30_000,
    });
    const before = (await api.get(`/v1/sessions/${id}/tree`)).body.nodes.length;

    // C goes where B went (after a1): it replays B's step of the script and completes.
    const c = await api.post(`/v1/sessions/${id}/prompt`, { content: 'C', ifBusy: 'rollback' });
    expect(c.status).toBe(202);
    await idle(id);
    expect((await run(b)).status).toBe('cancelled');
    expect((await run(c.body.runId)).status).toBe('completed');
    expect(await promptsOnPath(id)).toEqual(['A', 'C']);
    // Nothing deleted: B's messages are still in the tree, on another branch.
    const tree = (await api.get(`/v1/sessions/${id}/tree`)).body;
    expect(tree.nodes.length).toBeGreaterThan(before);
    const texts = tree.nodes.map((n: { message: { content: unknown } }) => textOf(n.message.content));
    expect(texts).toEqual(expect.arrayContaining(['B', 'b1']));
  });

  it('is a plain prompt on an idle session', async () => {
    const id = (await api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await api.post(`/v1/sessions/${id}/prompt`, { content: 'one', wait: true });
    const res = await api.post(`/v1/sessions/${id}/prompt`, {
      content: 'two',
      ifBusy: 'rollback',
      wait: true,
    });
    expect(res.body).toMatchObject({ status: 'completed', finalResponse: 'Echo: two' });
    expect(await promptsOnPath(id)).toEqual(['one', 'two']);
  });
});
