// Decision expiry: a paused run whose decisions are not given in time has the tool uses still awaited rejected
// (under the system scope) and continues; a decision given in time wins; each pause has its own expiry; a restart
// sets the expiry again from the store.

import { z } from 'zod';
import { defineTool } from '@canopy/agent';
import type { Message, Scope, ToolResultBlock } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { EngineHarness, EventLog, type Engine } from '@canopy/testing/engine-harness';

const TIMEOUT_MS = 400;
const h = new EngineHarness({ decisionTimeoutMs: TIMEOUT_MS });
let engine: Engine;
let scope: Scope;

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
  engine.tools.register(
    defineTool({
      name: 'transfer',
      description: 'moves money (needs approval)',
      input: z.object({ amount: z.number() }),
      approval: true,
      handler: ({ amount }) => `transferred ${amount}`,
    }),
  );
});
afterAll(() => h.teardown());

const CLIENT_TOOL = {
  name: 'pick_file',
  description: 'asks the user for a file',
  inputSchema: { type: 'object', properties: {} },
};

function scripted(script: unknown[]) {
  return engine.manager.create(scope, {
    model: 'mock:script',
    opts: { script, serverTools: ['transfer'] },
    tools: [CLIENT_TOOL],
  });
}

async function run(id: string) {
  const { runId } = await engine.service.prompt(scope, id, { content: 'go' });
  return engine.service.waitForRun(scope, id, runId);
}

function results(messages: Message[]): ToolResultBlock[] {
  return messages.flatMap((m) => m.content.filter((b): b is ToolResultBlock => b.type === 'tool_result'));
}

/** Waits for the run to end (waitForRun answers at once for a paused run); the committed messages then. */
async function finished(id: string, runId: string) {
  await eventually(async () => {
    const run = await engine.service.getRun(scope, runId);
    if (!['completed', 'cancelled', 'error'].includes(run.status)) throw new Error(`run ${run.status}`);
  });
  const run = await engine.service.getRun(scope, runId);
  const tree = await engine.service.tree(scope, id);
  return { status: run.status, messages: tree.nodes.map((n) => n.message), finishedAt: Date.now() };
}

describe('decision expiry', () => {
  it('rejects the awaited approvals and client calls after the timeout; the run continues and completes', async () => {
    const s = await scripted([
      {
        toolCalls: [
          { name: 'transfer', input: { amount: 1 } },
          { name: 'pick_file', input: {} },
        ],
      },
      { text: 'understood' },
    ]);
    const log = await EventLog.of(engine, scope, s.id);
    const pausedAt = Date.now();
    const paused = await run(s.id);
    expect(paused.status).toBe('paused');
    const done = await finished(s.id, paused.runId);
    expect(done.finishedAt - pausedAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(done.status).toBe('completed');
    const expired = results(done.messages);
    expect(expired.map((r) => [r.isError, r.content])).toEqual([
      [true, 'Tool rejected: no decision within 400 ms (expired)'],
      [true, 'Tool rejected: no decision within 400 ms (expired)'],
    ]);
    expect((await engine.service.get(scope, s.id)).status).toBe('idle');
    // paused -> busy (the expiry resumed it) -> idle, in order.
    const statuses = log.events.flatMap((e) => (e.type === 'status' ? [e.data.status] : []));
    expect(statuses).toEqual(['busy', 'paused', 'busy', 'idle']);
    const tree = await engine.service.tree(scope, s.id);
    expect(tree.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    log.unsubscribe();
  });

  it('leaves a run alone when its decision came in time', async () => {
    const s = await scripted([{ toolCalls: [{ name: 'transfer', input: { amount: 2 } }] }, { text: 'sent' }]);
    const paused = await run(s.id);
    await engine.service.resume(scope, s.id, { decision: { type: 'execute' } });
    const done = await finished(s.id, paused.runId);
    expect(results(done.messages).map((r) => r.content)).toEqual(['transferred 2']);
    await new Promise((r) => setTimeout(r, TIMEOUT_MS + 200));
    expect((await engine.service.getRun(scope, paused.runId)).status).toBe('completed');
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(4);
  });

  it('expires only the tool uses still awaited; the decided one keeps its decision', async () => {
    const s = await scripted([
      {
        toolCalls: [
          { name: 'transfer', input: { amount: 3 } },
          { name: 'transfer', input: { amount: 4 } },
        ],
      },
      { text: 'partly done' },
    ]);
    const paused = await run(s.id);
    const awaiting = (await engine.service.snapshot(scope, s.id)).inFlight!.awaiting;
    await engine.service.resume(scope, s.id, { toolUseId: awaiting[0]!.id, decision: { type: 'execute' } });
    const done = await finished(s.id, paused.runId);
    expect(done.status).toBe('completed');
    expect(results(done.messages).map((r) => r.content)).toEqual([
      'transferred 3',
      'Tool rejected: no decision within 400 ms (expired)',
    ]);
  });

  it('gives each pause of a run its own expiry', async () => {
    const s = await scripted([
      { toolCalls: [{ name: 'transfer', input: { amount: 5 } }] },
      { toolCalls: [{ name: 'transfer', input: { amount: 6 } }] },
      { text: 'two rounds' },
    ]);
    const paused = await run(s.id);
    // Decide the first pause late in its window: the second pause must still get a whole window.
    await new Promise((r) => setTimeout(r, TIMEOUT_MS / 2));
    await engine.service.resume(scope, s.id, { decision: { type: 'execute' } });
    await eventually(async () => {
      if ((await engine.service.get(scope, s.id)).status !== 'paused')
        throw new Error('not paused again yet');
    });
    const secondPauseAt = Date.now();
    const done = await finished(s.id, paused.runId);
    expect(done.finishedAt - secondPauseAt).toBeGreaterThanOrEqual(TIMEOUT_MS - 80);
    expect(results(done.messages).map((r) => r.content)).toEqual([
      'transferred 5',
      'Tool rejected: no decision within 400 ms (expired)',
    ]);
  });

  it('sets the expiry again after a restart (embedded timers do not survive one)', async () => {
    const s = await scripted([
      { toolCalls: [{ name: 'transfer', input: { amount: 7 } }] },
      { text: 'later' },
    ]);
    const paused = await run(s.id);
    expect(paused.status).toBe('paused');
    await engine.manager.shutdown();
    const restarted = h.engine(engine);
    engine = restarted;
    // This run's pause is set again (other tests' runs are all finished by now).
    expect(await restarted.duties.recover()).toEqual({ interrupted: 0, expiries: 1 });
    const done = await finished(s.id, paused.runId);
    expect(done.status).toBe('completed');
    expect(results(done.messages).map((r) => r.content)).toEqual([
      'Tool rejected: no decision within 400 ms (expired)',
    ]);
  });
});
