// The hook pipeline through the engine: pre-hooks run in order, sequential then parallel, and
// may inject content for one model call; post-hooks see each assistant message and may stop the tool loop. A
// parallel hook that throws or times out is skipped; a sequential one that throws ends the run with a clear
// error; injections over their budget halt the run naming the hook. Hooks report no progress (no tool call).
// Hooks act in the scope of the run's caller — unless the execution is a takeover (recovery): the system's.

import { z } from 'zod';
import { defineTool, type HookTurn, type PreHookResult } from '@canopy/agent';
import { messageText, systemScope, tenantScope, type Scope, type ToolResultBlock } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { EngineHarness, EventLog, type Engine } from '@canopy/testing/engine-harness';

// The harness's hooks: parallel ones time out after 500 ms, injections are capped at 200 tokens (~800 chars).
const h = new EngineHarness();
let engine: Engine;
let scope: Scope;

type Behaviour = (turn: HookTurn) => Promise<PreHookResult> | PreHookResult;
/** What each registered pre-hook does, per session (hooks are global to the engine). */
const pre = new Map<string, Partial<Record<string, Behaviour>>>();
const postSeen = new Map<string, Array<{ step: number; text: string; toolUses: number }>>();
const haltAfterStep = new Map<string, number>();
const postThrows = new Set<string>();
let toolRuns = 0;

const continueHook: Behaviour = () => ({ action: 'continue' });

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
  for (const [name, mode] of [
    ['seq-a', 'sequential'],
    ['seq-b', 'sequential'],
    ['par-slow', 'parallel'],
    ['par-throws', 'parallel'],
    ['par-inject', 'parallel'],
  ] as const) {
    engine.hooks.register({
      name,
      phase: 'pre',
      mode,
      run: (turn) => (pre.get(turn.sessionId)?.[name] ?? continueHook)(turn),
    });
  }
  engine.hooks.register({
    name: 'post-throws',
    phase: 'post',
    run: (turn) => {
      if (postThrows.has(turn.sessionId)) throw new Error('post-hook bug');
      return { action: 'continue' };
    },
  });
  engine.hooks.register({
    name: 'post-observe',
    phase: 'post',
    run: (turn) => {
      const m = turn.assistantMessage;
      const list = postSeen.get(turn.sessionId) ?? [];
      list.push({
        step: turn.step,
        text: messageText(m),
        toolUses: m.content.filter((b) => b.type === 'tool_use').length,
      });
      postSeen.set(turn.sessionId, list);
      const at = haltAfterStep.get(turn.sessionId);
      return at === turn.step ? { action: 'halt', reason: 'enough' } : { action: 'continue' };
    },
  });
  engine.tools.register(
    defineTool({
      name: 'count',
      description: 'counts its runs',
      input: z.object({}),
      handler: () => String(++toolRuns),
    }),
  );
});
afterAll(() => h.teardown());

async function prompt(sessionId: string, content: string) {
  const { runId } = await engine.service.prompt(scope, sessionId, { content });
  return engine.service.waitForRun(scope, sessionId, runId);
}

const script = (entries: unknown[]) =>
  engine.manager.create(scope, { model: 'mock:script', opts: { script: entries, serverTools: ['count'] } });

describe('post-hooks', () => {
  it('see every assistant message; a throwing one counts as continue', async () => {
    const s = await script([
      { text: 'using it', toolCalls: [{ name: 'count', input: {} }] },
      { text: 'done' },
    ]);
    postThrows.add(s.id);
    const result = await prompt(s.id, 'go');
    expect(result.status).toBe('completed');
    expect(postSeen.get(s.id)).toEqual([
      { step: 0, text: 'using it', toolUses: 1 },
      { step: 1, text: 'done', toolUses: 0 },
    ]);
  });

  it('halting stops the tool loop: the tool uses are answered as not run and the turn commits', async () => {
    const s = await script([{ toolCalls: [{ name: 'count', input: {} }] }, { text: 'never reached' }]);
    haltAfterStep.set(s.id, 0);
    const before = toolRuns;
    const log = await EventLog.of(engine, scope, s.id);
    const result = await prompt(s.id, 'go');
    expect(result.status).toBe('completed');
    expect(toolRuns).toBe(before); // the tool never ran
    expect((await log.waitFor('turn')).data.reason).toBe('hook_halted');
    const tree = await engine.service.tree(scope, s.id);
    expect(tree.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant', 'user']);
    const answered = tree.nodes[2]!.message.content[0] as ToolResultBlock;
    expect(answered).toMatchObject({
      isError: true,
      content: expect.stringMatching(/halted by hook post-observe: enough/),
    });
  });
});

describe('pre-hooks', () => {
  it('run sequential hooks in order, each seeing the injections before it, then the parallel ones', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    const order: string[] = [];
    pre.set(s.id, {
      'seq-a': (turn) => {
        order.push(`a:${turn.injections.length}`);
        return { action: 'continue', inject: [{ type: 'text', text: '[a]' }] };
      },
      'seq-b': (turn) => {
        order.push(`b:${turn.injections.length}`);
        turn.reportProgress('nothing to report on'); // a no-op outside a tool call
        return { action: 'continue', inject: [{ type: 'text', text: '[b]' }] };
      },
      'par-inject': (turn) => {
        order.push(`p:${turn.injections.length}`);
        return { action: 'continue', inject: [{ type: 'text', text: '[p]' }] };
      },
    });
    const log = await EventLog.of(engine, scope, s.id);
    const result = await prompt(s.id, 'hello');
    expect(order).toEqual(['a:0', 'b:1', 'p:2']);
    expect(engine.service.toTurnResult(s.id, result).finalResponse).toBe('Echo: hello\n\n[a]\n\n[b]\n\n[p]');
    expect(log.types()).not.toContain('tool_progress');
  });

  it('skip a parallel hook that throws or times out; the others’ injections still reach the model', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    pre.set(s.id, {
      'par-slow': async () => {
        await new Promise((r) => setTimeout(r, 2_000).unref());
        return { action: 'continue', inject: [{ type: 'text', text: '[late]' }] };
      },
      'par-throws': () => {
        throw new Error('flaky hook');
      },
      'par-inject': () => ({ action: 'continue', inject: [{ type: 'text', text: '[kept]' }] }),
    });
    const startedAt = Date.now();
    const result = await prompt(s.id, 'hi');
    expect(result.status).toBe('completed');
    expect(engine.service.toTurnResult(s.id, result).finalResponse).toBe('Echo: hi\n\n[kept]');
    expect(Date.now() - startedAt).toBeLessThan(2_000); // not waited for past its timeout
  });

  it('end the run with a clear error when a sequential hook throws: no model call, nothing committed', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    pre.set(s.id, {
      'seq-b': () => {
        throw new Error('database of rules unreachable');
      },
    });
    const log = await EventLog.of(engine, scope, s.id);
    const result = await prompt(s.id, 'hi');
    expect(result).toMatchObject({
      status: 'error',
      error: { code: 'hook_failed', message: 'pre-hook seq-b failed: database of rules unreachable' },
    });
    expect((await log.waitFor('error')).data.code).toBe('hook_failed');
    expect(log.types()).not.toContain('step');
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(0);
    expect((await engine.service.get(scope, s.id)).status).toBe('idle');
  });

  it('halt the run when injections overflow their budget, naming the hook that crossed it', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    pre.set(s.id, {
      'seq-a': () => ({ action: 'continue', inject: [{ type: 'text', text: 'x'.repeat(500) }] }),
      'seq-b': () => ({ action: 'continue', inject: [{ type: 'text', text: 'y'.repeat(500) }] }),
    });
    const result = await prompt(s.id, 'hi');
    expect(result).toMatchObject({ status: 'error', error: { code: 'injection_overflow' } });
    expect(result.error!.message).toMatch(
      /^pre-hook seq-b overflowed the injection budget: .*~251 tokens.*200$/,
    );
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(0);
  });
});

describe('the scope an execution acts in', () => {
  async function execute(dies: boolean) {
    const caller = tenantScope(scope.tenantId, { keyId: 'key-1' });
    const s = await engine.manager.create(caller, { model: 'mock:echo' });
    const seen: Scope[] = [];
    pre.set(s.id, {
      'seq-a': (turn) => {
        seen.push(turn.scope);
        return { action: 'continue' };
      },
    });
    // A run queued for a worker (not through the inline queue, so that this test decides who executes it).
    const started = await engine.deps.store.startRun(caller, {
      sessionId: s.id,
      kind: 'prompt',
      input: { content: 'hi' },
      status: 'queued',
    });
    if (!started.ok) throw new Error(started.reason);
    const runId = started.run.id;
    // A worker that took the run and died before doing anything: the next execution is a takeover.
    if (dies) await engine.deps.store.loadRun(systemScope(scope.tenantId), s.id, runId);
    await engine.duties.executeRun({ tenantId: scope.tenantId, sessionId: s.id, runId });
    const run = await eventually(async () => {
      const r = await engine.service.getRun(caller, runId);
      expect(r.status).toBe('completed');
      return r;
    });
    return { seen, run };
  }

  it('is the caller’s who started the run for its first execution', async () => {
    const { seen, run } = await execute(false);
    expect(run).toMatchObject({ actor: { type: 'key', keyId: 'key-1' }, attempts: 1 });
    expect(seen).toEqual([{ tenantId: scope.tenantId, keyId: 'key-1', roles: [], system: false }]);
  });

  it('is the sender’s for the turn of a steered prompt', async () => {
    const key = tenantScope(scope.tenantId, { keyId: 'key-2' });
    const alice = tenantScope(scope.tenantId, { userId: 'alice' });
    const s = await engine.manager.create(key, {
      model: 'mock:echo',
      opts: { delayMs: 30 },
      userId: 'alice',
    });
    const seen: Array<[string, Scope]> = [];
    pre.set(s.id, {
      'seq-a': (turn) => {
        seen.push([turn.userMessage ? messageText(turn.userMessage) : '', turn.scope]);
        return { action: 'continue' };
      },
    });
    const log = await EventLog.of(engine, key, s.id);
    const { runId } = await engine.service.prompt(key, s.id, { content: 'from the key' });
    await log.waitFor('text_delta');
    await engine.service.prompt(alice, s.id, { content: 'from alice', ifBusy: 'steer' });
    expect((await engine.service.waitForRun(key, s.id, runId)).status).toBe('completed');
    expect(seen).toEqual([
      ['from the key', key],
      ['from alice', alice],
    ]);
  });

  it('is the system’s for a takeover after the execution holding the run died (recovery)', async () => {
    const { seen, run } = await execute(true);
    expect(run).toMatchObject({ actor: { type: 'key', keyId: 'key-1' }, attempts: 2 });
    expect(seen).toEqual([systemScope(scope.tenantId)]);
  });
});
