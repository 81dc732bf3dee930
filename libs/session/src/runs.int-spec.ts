// Agent runs through the engine: server tools (validation, parallelism, timeouts, failures, progress), approvals
// and client tools with pause/resume (also across a restart), cancel, races, a run killed mid-way, hooks,
// provider retries, the step cap and steering.

import { z } from 'zod';
import { defineTool } from '@canopy/agent';
import { toolUses, type Message, type Scope, type ToolResultBlock } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { EngineHarness, EventLog, type Engine } from '@canopy/testing/engine-harness';

const h = new EngineHarness();
let engine: Engine;
let scope: Scope;
let slowToolStarted: () => void = () => undefined;

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
  engine.tools
    .register(
      defineTool({
        name: 'add',
        description: 'adds two numbers',
        input: z.object({ a: z.number(), b: z.number() }),
        handler: async ({ a, b }, turn) => {
          turn.reportProgress({ adding: [a, b] });
          await new Promise((r) => setTimeout(r, 30));
          return { sum: a + b };
        },
      }),
    )
    .register(
      defineTool({
        name: 'boom',
        description: 'always fails',
        input: z.object({}),
        handler: () => {
          throw new Error('kaboom');
        },
      }),
    )
    .register(
      defineTool({
        name: 'hang',
        description: 'never answers',
        input: z.object({}),
        timeoutMs: 100,
        handler: () => new Promise(() => undefined),
      }),
    )
    .register(
      defineTool({
        name: 'slow',
        description: 'takes its time',
        input: z.object({}),
        handler: async (_input, turn) => {
          slowToolStarted();
          await new Promise((resolve, reject) => {
            const t = setTimeout(resolve, 1_500);
            turn.signal.addEventListener('abort', () => {
              clearTimeout(t);
              reject(new Error('aborted'));
            });
          });
          return 'done slowly';
        },
      }),
    )
    .register(
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

async function scripted(script: unknown[], extra: Record<string, unknown> = {}, tools: unknown[] = []) {
  return engine.manager.create(scope, {
    model: 'mock:script',
    opts: { script, serverTools: ['add', 'boom', 'hang', 'slow', 'transfer'], ...extra },
    tools: tools as never,
  });
}

async function run(id: string, content = 'go') {
  const { runId } = await engine.service.prompt(scope, id, { content });
  return engine.service.waitForRun(scope, id, runId);
}

function resultsOf(messages: Message[]): ToolResultBlock[] {
  return messages.flatMap((m) => m.content.filter((b): b is ToolResultBlock => b.type === 'tool_result'));
}

describe('server tools', () => {
  it('run in parallel, answer in tool-use order in one user message, then the model finishes', async () => {
    const s = await scripted([
      {
        toolCalls: [
          { name: 'add', input: { a: 1, b: 2 } },
          { name: 'add', input: { a: 3, b: 4 } },
        ],
      },
      { text: 'sums computed' },
    ]);
    const log = await EventLog.of(engine, scope, s.id);
    const result = await run(s.id);
    expect(result.status).toBe('completed');
    await log.waitFor('title'); // titling follows the first run's commit
    await log.waitFor('store', (e) => e.data.kind === 'state');
    await log.waitFor('context'); // then the token meter
    const messages = result.messages.map((m) => m.message);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const uses = toolUses(messages[1]!);
    expect(resultsOf(messages).map((r) => [r.toolUseId, r.content, r.isError])).toEqual([
      [uses[0]!.id, '{"sum":3}', false],
      [uses[1]!.id, '{"sum":7}', false],
    ]);
    expect(log.of('tool_progress').map((e) => e.data.payload)).toEqual(
      expect.arrayContaining([{ adding: [1, 2] }, { adding: [3, 4] }]),
    );
    expect(log.of('tool_result')).toHaveLength(2);
    expect(log.milestones().slice(1)).toEqual([
      'status',
      'message',
      'message',
      'step',
      'tool_progress',
      'tool_progress',
      'tool_result',
      'tool_result',
      'message',
      'message',
      'step',
      'status',
      'turn',
      'tree',
      'store',
      'title',
      'store',
      'context',
    ]);
    const turn = engine.service.toTurnResult(s.id, result);
    expect(turn.toolCalls.map((c) => c.toolName)).toEqual(['add', 'add']);
    expect(turn.toolResults.map((r) => r.toolId)).toEqual(turn.toolCalls.map((c) => c.toolId));
    expect(turn.finalResponse).toBe('sums computed');
  });

  it('turn invalid input, a throw, a timeout and an unknown tool into error results the model sees', async () => {
    const s = await scripted([
      {
        toolCalls: [
          { name: 'add', input: { a: 'one' } },
          { name: 'boom', input: {} },
          { name: 'hang', input: {} },
          { name: 'nope', input: {} },
        ],
      },
      { text: 'recovered' },
    ]);
    const result = await run(s.id);
    expect(result.status).toBe('completed');
    const results = resultsOf(result.messages.map((m) => m.message));
    expect(results.map((r) => r.isError)).toEqual([true, true, true, true]);
    expect(results[0]!.content).toMatch(/invalid tool arguments/);
    expect(results[1]!.content).toMatch(/boom failed: kaboom/);
    expect(results[2]!.content).toMatch(/hang timed out after 100 ms/);
    expect(results[3]!.content).toBe('unknown tool: nope');
  });
});

describe('approvals and client tools', () => {
  it('pauses for an approval tool; execute runs it and the run completes', async () => {
    const s = await scripted([{ toolCalls: [{ name: 'transfer', input: { amount: 5 } }] }, { text: 'sent' }]);
    const log = await EventLog.of(engine, scope, s.id);
    const paused = await run(s.id);
    expect(paused.status).toBe('paused');
    const pause = await log.waitFor('pause');
    expect(pause.data).toMatchObject({
      reason: 'approval',
      toolUses: [{ name: 'transfer', input: { amount: 5 } }],
    });
    const statusIdx = log.events.findIndex((e) => e.type === 'status' && e.data.status === 'paused');
    expect(log.events[statusIdx + 1]!.type).toBe('pause'); // status comes before the event that caused it
    expect((await engine.service.get(scope, s.id)).status).toBe('paused');
    const snapshot = await engine.service.snapshot(scope, s.id);
    expect(snapshot.inFlight?.awaiting.map((u) => u.name)).toEqual(['transfer']);

    const { runId } = await engine.service.resume(scope, s.id, { decision: { type: 'execute' } });
    expect(runId).toBe(paused.runId);
    const done = await engine.service.waitForRun(scope, s.id, runId);
    expect(done.status).toBe('completed');
    expect(resultsOf(done.messages.map((m) => m.message))[0]).toMatchObject({
      content: 'transferred 5',
      isError: false,
    });
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(4);
  });

  it('rejects a call with a reason the model sees', async () => {
    const s = await scripted([
      { toolCalls: [{ name: 'transfer', input: { amount: 9 } }] },
      { text: 'ok, not sent' },
    ]);
    expect((await run(s.id)).status).toBe('paused');
    const { runId } = await engine.service.resume(scope, s.id, {
      decision: { type: 'reject', reason: 'too much' },
    });
    const done = await engine.service.waitForRun(scope, s.id, runId);
    expect(resultsOf(done.messages.map((m) => m.message))[0]).toMatchObject({
      content: 'Tool rejected: too much',
      isError: true,
    });
  });

  it('pauses for a client tool and continues with the result the client supplies', async () => {
    const s = await scripted([{ toolCalls: [{ name: 'locate', input: {} }] }, { text: 'you are home' }], {}, [
      { name: 'locate', description: 'where the user is', inputSchema: { type: 'object' } },
    ]);
    const paused = await run(s.id);
    expect(paused.status).toBe('paused');
    await expect(engine.service.resume(scope, s.id, { decision: { type: 'execute' } })).rejects.toMatchObject(
      {
        code: 'bad_request',
      },
    );
    const { runId } = await engine.service.resume(scope, s.id, {
      decision: { type: 'result', content: 'at home' },
    });
    const done = await engine.service.waitForRun(scope, s.id, runId);
    expect(done.status).toBe('completed');
    expect(resultsOf(done.messages.map((m) => m.message))[0]).toMatchObject({
      content: 'at home',
      isError: false,
    });
  });

  it('waits for every decision of a round, one tool use at a time', async () => {
    const s = await scripted([
      {
        toolCalls: [
          { name: 'transfer', input: { amount: 1 } },
          { name: 'add', input: { a: 1, b: 1 } },
          { name: 'transfer', input: { amount: 2 } },
        ],
      },
      { text: 'all done' },
    ]);
    const paused = await run(s.id);
    const awaiting = (await engine.service.snapshot(scope, s.id)).inFlight!.awaiting;
    expect(awaiting.map((u) => u.input)).toEqual([{ amount: 1 }, { amount: 2 }]);
    await engine.service.resume(scope, s.id, { toolUseId: awaiting[1]!.id, decision: { type: 'execute' } });
    expect((await engine.service.get(scope, s.id)).status).toBe('paused');
    await expect(
      engine.service.resume(scope, s.id, { toolUseId: awaiting[1]!.id, decision: { type: 'execute' } }),
    ).rejects.toMatchObject({ code: 'bad_request' });
    await engine.service.resume(scope, s.id, { toolUseId: awaiting[0]!.id, decision: { type: 'reject' } });
    const done = await engine.service.waitForRun(scope, s.id, paused.runId);
    expect(done.status).toBe('completed');
    expect(resultsOf(done.messages.map((m) => m.message)).map((r) => r.content)).toEqual([
      'Tool rejected',
      '{"sum":2}',
      'transferred 2',
    ]);
  });

  it('keeps a pending decision across a restart of the engine over the same database', async () => {
    const s = await scripted([
      { toolCalls: [{ name: 'transfer', input: { amount: 3 } }] },
      { text: 'after restart' },
    ]);
    expect((await run(s.id)).status).toBe('paused');
    await engine.manager.shutdown();
    const restarted = h.engine(engine);
    expect(await restarted.duties.recoverInterruptedRuns()).toBe(0); // paused runs wait, they are not lost
    const snapshot = await restarted.service.snapshot(scope, s.id);
    expect(snapshot.session.status).toBe('paused');
    expect(snapshot.inFlight?.awaiting.map((u) => u.name)).toEqual(['transfer']);
    const { runId } = await restarted.service.resume(scope, s.id, { decision: { type: 'execute' } });
    const done = await restarted.service.waitForRun(scope, s.id, runId);
    expect(done.status).toBe('completed');
    const tree = await restarted.service.tree(scope, s.id);
    expect(tree.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    // The result covers the whole run, what it did before the restart included, each message by its node.
    expect(done.messages.map((m) => [m.nodeId, m.message.role])).toEqual(
      tree.nodes.map((n) => [n.id, n.message.role]),
    );
    engine = restarted;
  });

  it('cancels a paused run: idle, cancelled with the pending messages, nothing committed', async () => {
    const s = await scripted([{ toolCalls: [{ name: 'transfer', input: { amount: 4 } }] }]);
    const log = await EventLog.of(engine, scope, s.id);
    const paused = await run(s.id);
    const from = log.events.length;
    expect(await engine.service.cancel(scope, s.id)).toEqual({ runId: paused.runId });
    const cancelled = await log.waitFor('cancelled');
    expect(cancelled.data.partial.map((m) => m.role)).toEqual(['user', 'assistant']);
    await log.waitFor('context', (e) => e.data.runId === paused.runId);
    expect(log.milestones(from)).toEqual(['status', 'cancelled', 'context']);
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(0);
    expect((await engine.service.getRun(scope, paused.runId)).status).toBe('cancelled');
    await expect(engine.service.resume(scope, s.id, { decision: { type: 'execute' } })).rejects.toMatchObject(
      {
        code: 'not_paused',
      },
    );
  });
});

describe('cancel, races and interruptions', () => {
  it('starts exactly one of two prompts sent at the same instant; the other gets session_busy', async () => {
    // A reply slow enough (200 ms a word) that the first run is still in flight when the second prompt lands.
    const s = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 200 } });
    const outcomes = await Promise.allSettled([
      engine.service.prompt(scope, s.id, { content: 'first' }),
      engine.service.prompt(scope, s.id, { content: 'second' }),
    ]);
    const ok = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.filter((o) => o.status === 'rejected');
    expect(ok).toHaveLength(1);
    expect(refused).toHaveLength(1);
    expect((refused[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'session_busy' });
    await engine.service.waitForRun(
      scope,
      s.id,
      (ok[0] as PromiseFulfilledResult<{ runId: string }>).value.runId,
    );
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(2);
  });

  it('cancels a busy run mid-tool: the tool is aborted, idle then cancelled, nothing committed', async () => {
    const s = await scripted([{ toolCalls: [{ name: 'slow', input: {} }] }, { text: 'never' }]);
    const log = await EventLog.of(engine, scope, s.id);
    const started = new Promise<void>((r) => (slowToolStarted = r));
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'take your time' });
    await started;
    const at = Date.now();
    await engine.service.cancel(scope, s.id);
    expect(Date.now() - at).toBeLessThan(1_000); // the slow tool did not run to its end
    const result = await engine.service.waitForRun(scope, s.id, runId);
    expect(result.status).toBe('cancelled');
    await log.waitFor('context', (e) => e.data.runId === runId);
    const types = log.milestones();
    expect(types.slice(types.lastIndexOf('status'))).toEqual(['status', 'cancelled', 'context']);
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(0);
    expect((await engine.service.get(scope, s.id)).status).toBe('idle');
  });

  it('ends a run killed between steps (its process gone) as interrupted; the session stays usable', async () => {
    const s = await scripted([
      { toolCalls: [{ name: 'slow', input: {} }] },
      { text: 'never' },
      { text: 'fresh start' },
    ]);
    const started = new Promise<void>((r) => (slowToolStarted = r));
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'doomed' });
    await started; // between the first model step and the second
    // The process "dies": a new engine over the same database recovers; the old one's late commit is fenced.
    const survivor = h.engine(engine);
    expect(await survivor.duties.recoverInterruptedRuns()).toBeGreaterThanOrEqual(1);
    const run = await survivor.service.getRun(scope, runId);
    expect(run).toMatchObject({ status: 'error', error: { code: 'interrupted' } });
    expect((await survivor.service.get(scope, s.id)).status).toBe('idle');
    expect((await survivor.service.tree(scope, s.id)).nodes).toHaveLength(0);
    // The old executor finishes its tool, calls the model, tries to commit, is fenced out and stops.
    const dead = engine;
    await eventually(() => expect(dead.duties.isExecuting(runId)).toBe(false), { timeoutMs: 5_000 });
    expect((await survivor.service.tree(scope, s.id)).nodes).toHaveLength(0);
    expect(await survivor.service.getRun(scope, runId)).toMatchObject({ status: 'error' });
    await survivor.manager.update(scope, s.id, { opts: { script: [{ text: 'fresh start' }] } });
    const next = await survivor.service.prompt(scope, s.id, { content: 'again' });
    const done = await survivor.service.waitForRun(scope, s.id, next.runId);
    expect(done.status).toBe('completed');
    expect((await survivor.service.tree(scope, s.id)).nodes).toHaveLength(2);
    engine = survivor;
  });
});

describe('hooks, retries, step cap, steering', () => {
  it('retries a retryable provider error with a retry event, then succeeds', async () => {
    const s = await scripted([{ error: 'overloaded', retryable: true }, { text: 'second try' }]);
    const log = await EventLog.of(engine, scope, s.id);
    const result = await run(s.id);
    expect(result.status).toBe('completed');
    expect(log.of('retry').map((e) => e.data.attempt)).toEqual([1]);
    expect(engine.service.toTurnResult(s.id, result).finalResponse).toBe('second try');
  });

  it('fails the run on a non-retryable error: idle, error, nothing committed', async () => {
    const s = await scripted([{ error: 'bad request' }]);
    const log = await EventLog.of(engine, scope, s.id);
    const result = await run(s.id);
    expect(result).toMatchObject({ status: 'error', error: { message: 'bad request' } });
    await log.waitFor('context', (e) => e.data.runId === result.runId);
    expect(log.milestones().slice(-4)).toEqual(['message', 'status', 'error', 'context']);
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(0);
    expect(engine.service.toTurnResult(s.id, result).isError).toBe(true);
  });

  it('caps the chain at maxSteps and never commits tool uses without results', async () => {
    const loop = { toolCalls: [{ name: 'add', input: { a: 1, b: 1 } }] };
    const s = await scripted([loop, loop, loop, loop]);
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'loop', maxSteps: 2 });
    const result = await engine.service.waitForRun(scope, s.id, runId);
    expect(result.status).toBe('max_steps'); // completed, at its step cap
    expect((await engine.service.getRun(scope, runId)).status).toBe('completed');
    const tree = await engine.service.tree(scope, s.id);
    expect(tree.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    const lastAssistant = tree.nodes[3]!.message;
    expect(resultsOf([tree.nodes[4]!.message]).map((r) => r.toolUseId)).toEqual(
      toolUses(lastAssistant).map((u) => u.id),
    );
  });

  it('runs a steered prompt at the boundary: the first turn commits, the steered one follows in the same run', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 40 } });
    const log = await EventLog.of(engine, scope, s.id);
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'first question' });
    await log.waitFor('text_delta');
    expect(await engine.service.prompt(scope, s.id, { content: 'ignored', ifBusy: 'steer' })).toEqual({
      runId,
      staged: true,
    });
    expect(await engine.service.prompt(scope, s.id, { content: 'last one wins', ifBusy: 'steer' })).toEqual({
      runId,
      staged: true,
    });
    const result = await engine.service.waitForRun(scope, s.id, runId);
    expect(result.status).toBe('completed');
    expect(log.of('turn').map((e) => e.data.stop)).toEqual(['continue', 'stop']);
    const tree = await engine.service.tree(scope, s.id);
    expect(tree.nodes.map((n) => (n.message.content[0] as { text: string }).text)).toEqual([
      'first question',
      'Echo: first question',
      'last one wins',
      'Echo: last one wins',
    ]);
  });

  it('starts exactly one run for concurrent steered prompts on an idle session and stages the others', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 20 } });
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        engine.service.prompt(scope, s.id, { content: `steer ${i}`, ifBusy: 'steer' }),
      ),
    );
    const rejected = results.filter((r) => r.status === 'rejected');
    expect(rejected).toEqual([]);
    const answers = results.map(
      (r) => (r as PromiseFulfilledResult<{ runId: string; staged?: boolean }>).value,
    );
    const started = answers.filter((a) => !a.staged);
    expect(started).toHaveLength(1);
    expect(new Set(answers.map((a) => a.runId))).toEqual(new Set([started[0]!.runId]));
    const result = await engine.service.waitForRun(scope, s.id, started[0]!.runId);
    expect(result.status).toBe('completed');
  });

  it('lets pre-hooks inject context for the model only, and halts before any model call', async () => {
    engine.hooks.register({
      name: 'inject-tip',
      phase: 'pre',
      mode: 'sequential',
      run: (turn) =>
        turn.sessionId.startsWith('hooked-')
          ? { action: 'continue', inject: [{ type: 'text', text: '[tip]' }] }
          : { action: 'continue' },
    });
    engine.hooks.register({
      name: 'gate',
      phase: 'pre',
      mode: 'parallel',
      run: (turn) =>
        turn.sessionId.startsWith('halted-')
          ? { action: 'halt', reason: 'not allowed' }
          : { action: 'continue' },
    });
    const hooked = await engine.manager.create(scope, { id: 'hooked-1', model: 'mock:echo' });
    const result = await run(hooked.id, 'hello');
    expect(engine.service.toTurnResult(hooked.id, result).finalResponse).toBe('Echo: hello\n\n[tip]');
    const tree = await engine.service.tree(scope, hooked.id);
    expect(tree.nodes[0]!.message.content).toEqual([{ type: 'text', text: 'hello' }]); // never persisted

    const halted = await engine.manager.create(scope, { id: 'halted-1', model: 'mock:echo' });
    const stopped = await run(halted.id, 'hi');
    expect(stopped).toMatchObject({ status: 'error', error: { code: 'hook_halted' } });
    expect(stopped.error!.message).toMatch(/gate: not allowed/);
    expect(stopped.messages.filter((m) => m.message.role === 'assistant')).toHaveLength(0);
    expect((await engine.service.tree(scope, halted.id)).nodes).toHaveLength(0);
  });
});

describe('store failures', () => {
  it('reports a failed commit as events (store error, then the run error) and leaves the session usable', async () => {
    // A real database refusal: a trigger rejects any node whose message mentions "poison".
    await h.db.withAdmin('test: install a failing trigger', async (tx) => {
      await tx.$executeRawUnsafe(`CREATE OR REPLACE FUNCTION reject_poison() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.message::text LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned message'; END IF; RETURN NEW; END $$`);
      await tx.$executeRawUnsafe(
        'CREATE TRIGGER reject_poison BEFORE INSERT ON nodes FOR EACH ROW EXECUTE FUNCTION reject_poison()',
      );
    });
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    const log = await EventLog.of(engine, scope, s.id);
    const result = await run(s.id, 'poison pill');
    expect(result.status).toBe('error');
    const failed = log.of('store').find((e) => !e.data.ok);
    expect(failed?.data).toMatchObject({
      ok: false,
      kind: 'tree',
      error: expect.stringMatching(/poisoned message/),
    });
    await log.waitFor('context', (e) => e.data.runId === result.runId);
    expect(log.milestones().slice(-4)).toEqual(['store', 'status', 'error', 'context']);
    expect((await engine.service.get(scope, s.id)).status).toBe('idle');
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(0);
    const ok = await run(s.id, 'healthy');
    expect(ok.status).toBe('completed');
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(2);
  });
});

describe('a run the queue gives up on', () => {
  it('ends as an error with a rollback, the session idle, and its late commit fenced out', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    await run(s.id, 'first question');
    const before = await engine.service.tree(scope, s.id);
    await engine.manager.update(scope, s.id, { opts: { delayMs: 80 } });
    const log = await EventLog.of(engine, scope, s.id);
    const { runId } = await engine.service.branch(scope, s.id, { nodeId: 1 });
    await log.waitFor('text_delta');
    // What the queue does when a run's attempts (or stall takeovers) are spent.
    await engine.duties.giveUpRun(
      scope.tenantId,
      s.id,
      runId,
      new Error('job stalled more than allowable limit'),
    );
    const failed = await log.waitFor('error');
    expect(failed.data).toMatchObject({ runId, code: 'interrupted' });
    expect(failed.data.message).toMatch(/stalled more than allowable limit/);
    await log.waitFor('store', (e) => e.seq > failed.seq);
    expect(await engine.service.getRun(scope, runId)).toMatchObject({ status: 'error' });
    expect((await engine.service.get(scope, s.id)).status).toBe('idle');
    // The executor still streaming it finishes and is fenced: nothing of the run lands in the tree.
    await eventually(() => expect(engine.duties.isExecuting(runId)).toBe(false), {
      timeoutMs: 5_000,
    });
    const after = await engine.service.tree(scope, s.id);
    expect(after.nodes).toEqual(before.nodes);
    expect(after.path).toEqual(before.path);
    // Giving up a run that already ended changes nothing.
    await engine.duties.giveUpRun(scope.tenantId, s.id, runId, new Error('again'));
    expect(log.of('error')).toHaveLength(1);
  });
});
