// Double texting over HTTP, on both runtimes (a Postgres database of its own, and the embedded PGlite): prompts
// sent to a busy session with ifBusy `enqueue` wait their turn first in, first out (listed in GET
// /v1/sessions/:id as `queued`, cancellable by id, and answered by GET /v1/runs/:id as `queued` with their place
// in the queue), `interrupt` stops the run in flight, which keeps its prompt, its completed steps and the text it
// was streaming (the last message marked `interrupted`), and goes next, `rollback` cancels it and goes where its
// prompt was attached (the cancelled run's messages leave the active path, kept in the tree). Runs of one session
// never overlap.

/* eslint-disable @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return -- JSON bodies */

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '@canopy/testing';
import { Api, newTenant, type ApiResponse } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let api: Api;

const runtimes: Array<[string, () => Promise<{ app: TestApp; cleanup: () => void }>]> = [
  ['Postgres', async () => ({ app: await startTestApp(), cleanup: () => undefined })],
  [
    'the embedded PGlite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'canopy-double-texting-'));
      return {
        app: await startTestApp({ embeddedDataDir: dir }),
        cleanup: () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  ],
];

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

/** A message as the tests compare it: its role, its blocks in short, and whether it is marked interrupted. */
interface Shown {
  role: string;
  blocks: string[];
  interrupted?: true;
}

function shown(message: { role: string; content: unknown; interrupted?: true }): Shown {
  const blocks = (message.content as Array<Record<string, unknown>>).map((b) => {
    if (b.type === 'text') return b.text as string;
    if (b.type === 'tool_use') return `tool_use ${b.name as string}`;
    if (b.type === 'tool_result') return `tool_result${b.isError ? ' error' : ''}: ${b.content as string}`;
    return b.type as string;
  });
  return { role: message.role, blocks, ...(message.interrupted ? { interrupted: true } : {}) };
}

/** The active path's messages, shown. */
async function pathOf(sessionId: string): Promise<Shown[]> {
  const tree = (await api.get(`/v1/sessions/${sessionId}/tree`)).body;
  const byId = new Map<number, { message: { role: string; content: unknown; interrupted?: true } }>(
    tree.nodes.map((n: { id: number }) => [n.id, n]),
  );
  return (tree.path as number[]).map((id) => shown(byId.get(id)!.message));
}

/** What the session's run in flight has streamed of the message it is writing (GET /v1/sessions/:id). */
async function streamed(sessionId: string): Promise<string> {
  const partial = (await api.get(`/v1/sessions/${sessionId}`)).body.inFlight?.partial;
  return partial ? textOf(partial.content) : '';
}

describe.each(runtimes)('on %s', (name, start) => {
  let t: TestApp;
  let cleanup: () => void;

  beforeAll(async () => {
    ({ app: t, cleanup } = await start());
    ({ api } = await newTenant(t, `double texting on ${name}`));
  });

  afterAll(async () => {
    await t?.close();
    cleanup?.();
  });

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
      const res = await api.post(`/v1/sessions/${id}/prompt`, {
        content: 'hi',
        ifBusy: 'enqueue',
        wait: true,
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'completed', finalResponse: 'Echo: hi' });
      expect((await api.get(`/v1/sessions/${id}`)).body.queued).toEqual([]);
    });
  });

  describe('a queued prompt at GET /v1/runs/:id', () => {
    it('answers status "queued" with its place in the queue until its run starts, then the run', async () => {
      // The first run streams slowly: the prompts queued behind it wait while they are looked at.
      const id = (
        await api.post('/v1/sessions', {
          model: 'mock:script',
          opts: { script: [{ delayMs: 5_000, text: 'slow reply' }, { text: 'one' }, { text: 'two' }] },
        })
      ).body.id;
      const first = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'first' })).body.runId;
      const queue = async (content: string): Promise<string> =>
        (await api.post(`/v1/sessions/${id}/prompt`, { content, ifBusy: 'enqueue' })).body.runId;
      const [e1, e2, e3] = [await queue('e1'), await queue('e2'), await queue('e3')];
      const expected = (runId: string, position: number) => ({
        status: 200,
        body: {
          id: runId,
          sessionId: id,
          kind: 'prompt',
          status: 'queued',
          position,
          mode: 'enqueue',
          attempts: 0,
          actor: expect.objectContaining({ type: 'key' }),
          startedAt: null,
          finishedAt: null,
        },
      });
      expect(await api.get(`/v1/runs/${e1}`)).toMatchObject(expected(e1, 1));
      expect(await api.get(`/v1/runs/${e3}`)).toMatchObject(expected(e3, 3));
      // Taken out before its turn: it never runs, and the ones behind it move up.
      expect((await api.delete(`/v1/sessions/${id}/queue/${e2}`)).status).toBe(204);
      expect((await api.get(`/v1/runs/${e2}`)).body.error.code).toBe('not_found');
      expect(await api.get(`/v1/runs/${e3}`)).toMatchObject(expected(e3, 2));
      // Another tenant's id is not found, as ids that do not exist are.
      const other = (await newTenant(t, 'double texting stranger')).api;
      expect((await other.get(`/v1/runs/${e1}`)).body.error.code).toBe('not_found');

      expect((await api.post(`/v1/sessions/${id}/cancel`)).status).toBe(200);
      await idle(id);
      const done = await Promise.all([first, e1, e3].map(run));
      expect(done.map((r) => r.status)).toEqual(['cancelled', 'completed', 'completed']);
      for (const r of done.slice(1)) expect(r).not.toHaveProperty('position');
    });
  });

  describe('ifBusy: "interrupt"', () => {
    // The interrupted run had completed a tool round and was streaming its answer slowly.
    it('keeps the interrupted prompt, its completed tool round and the text it streamed (marked), then the new prompt', async () => {
      const slow =
        'Let me put that answer into many words so that it takes a good while to stream all of them out';
      const id = (
        await api.post('/v1/sessions', {
          model: 'mock:script',
          opts: {
            serverTools: ['calculator'],
            script: [
              { text: 'Echo: base' },
              { toolCalls: [{ name: 'calculator', input: { expression: '6 * 7' } }] },
              { delayMs: 500, text: slow },
              { text: 'Echo: INTERRUPTER' },
            ],
          },
        })
      ).body.id;
      expect((await api.post(`/v1/sessions/${id}/prompt`, { content: 'base', wait: true })).body.status).toBe(
        'completed',
      );
      const interrupted = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'INTERRUPTED' })).body
        .runId;
      await eventually(async () => expect(await streamed(id)).not.toBe(''), {
        timeoutMs: 30_000,
        intervalMs: 50,
      });
      const interrupter = await api.post(`/v1/sessions/${id}/prompt`, {
        content: 'INTERRUPTER',
        ifBusy: 'interrupt',
      });
      expect(interrupter.status).toBe(202);
      await idle(id);

      expect((await run(interrupted)).status).toBe('cancelled');
      expect((await run(interrupter.body.runId)).status).toBe('completed');
      const path = await pathOf(id);
      expect(path).toEqual([
        { role: 'user', blocks: ['base'] },
        { role: 'assistant', blocks: ['Echo: base'] },
        { role: 'user', blocks: ['INTERRUPTED'] },
        { role: 'assistant', blocks: ['tool_use calculator'] },
        { role: 'user', blocks: ['tool_result: {"expression":"6 * 7","value":42}'] },
        { role: 'assistant', blocks: [expect.any(String)], interrupted: true },
        { role: 'user', blocks: ['INTERRUPTER'] },
        { role: 'assistant', blocks: ['Echo: INTERRUPTER'] },
      ]);
      // The words it had streamed, not the whole answer.
      const partial = path[5]!.blocks[0]!;
      expect(partial).not.toBe('');
      expect(slow.startsWith(partial) && partial !== slow).toBe(true);
      // The UI's turns say which one was interrupted.
      const turns = (await api.get(`/v1/sessions/${id}/turns`)).body.data as Array<{ interrupted?: true }>;
      expect(turns.map((turn) => turn.interrupted ?? false)).toEqual([false, true, false]);
    });

    it('keeps a paused run: its prompt and its tool round, closed with an error result and marked', async () => {
      const id = (
        await api.post('/v1/sessions', {
          model: 'mock:script',
          opts: {
            serverTools: ['deploy'],
            script: [
              { text: 'Echo: base' },
              { toolCalls: [{ name: 'deploy', input: { target: 'prod' } }] },
              { text: 'Echo: INTERRUPTER' },
            ],
          },
        })
      ).body.id;
      await api.post(`/v1/sessions/${id}/prompt`, { content: 'base', wait: true });
      const paused = await api.post(`/v1/sessions/${id}/prompt`, { content: 'INTERRUPTED', wait: true });
      expect(paused.body.status).toBe('paused');
      const interrupter = await api.post(`/v1/sessions/${id}/prompt`, {
        content: 'INTERRUPTER',
        ifBusy: 'interrupt',
      });
      expect(interrupter.status).toBe(202);
      await idle(id);

      expect((await run(paused.body.runId)).status).toBe('cancelled');
      expect(await pathOf(id)).toEqual([
        { role: 'user', blocks: ['base'] },
        { role: 'assistant', blocks: ['Echo: base'] },
        { role: 'user', blocks: ['INTERRUPTED'] },
        { role: 'assistant', blocks: ['tool_use deploy'] },
        {
          role: 'user',
          blocks: ['tool_result error: not completed: the run was interrupted by a newer prompt'],
          interrupted: true,
        },
        { role: 'user', blocks: ['INTERRUPTER'] },
        { role: 'assistant', blocks: ['Echo: INTERRUPTER'] },
      ]);
    });

    it('stops the run in flight and runs the new prompt next, ahead of the queue', async () => {
      const { id, first } = await busySession();
      const queued = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'waiting', ifBusy: 'enqueue' }))
        .body;
      const interrupting = await api.post(`/v1/sessions/${id}/prompt`, {
        content: 'now',
        ifBusy: 'interrupt',
      });
      expect(interrupting.status).toBe(202);
      await idle(id);
      expect((await run(first)).status).toBe('cancelled');
      const [now, waiting] = await Promise.all([run(interrupting.body.runId), run(queued.runId)]);
      expect([now.status, waiting.status]).toEqual(['completed', 'completed']);
      expect(Date.parse(waiting.startedAt!)).toBeGreaterThanOrEqual(Date.parse(now.finishedAt!));
      // The interrupted prompt stays on the path, before the one that interrupted it.
      expect(await promptsOnPath(id)).toEqual(['first', 'now', 'waiting']);
    });
  });

  describe('ifBusy: "rollback"', () => {
    it('cancels the run in flight and attaches the new prompt where its prompt was: its messages leave the path', async () => {
      // B's run commits its first turn when a steered prompt is staged on it, then waits in the steered turn: a
      // rollback takes all of it off the path.
      const id = (
        await api.post('/v1/sessions', {
          model: 'mock:script',
          opts: {
            script: [{ text: 'a1' }, { delayMs: 1_500, text: 'b1' }, { delayMs: 60_000, text: 'late' }],
          },
        })
      ).body.id;
      expect((await api.post(`/v1/sessions/${id}/prompt`, { content: 'A', wait: true })).body.status).toBe(
        'completed',
      );
      const b = (await api.post(`/v1/sessions/${id}/prompt`, { content: 'B' })).body.runId;
      expect(
        (await api.post(`/v1/sessions/${id}/prompt`, { content: 'S', ifBusy: 'steer' })).body.staged,
      ).toBe(true);
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
});
