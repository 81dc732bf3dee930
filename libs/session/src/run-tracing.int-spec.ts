// A run as OpenTelemetry sees it, through the real engine (Postgres store, inline queue, mock models), read with
// the SDK's in-memory exporter: the request that started the run is the parent of its `invoke_agent` span, whose
// children are the model calls (`chat {model}`), the tool calls (`execute_tool {tool}`: server, client) and the
// commit; a resumed run's execution links to the one that paused; the end user only when the operator opted in;
// message content only when opted in.

import { z } from 'zod';
import { SpanStatusCode } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { defineTool } from '@canopy/agent';
import { canopyTracer, configureTelemetry } from '@canopy/common';
import { tenantScope, type Scope } from '@canopy/core';
import { TenantSettingsRepository } from '@canopy/tenancy';
import { InMemoryTelemetry, eventually, spanTree } from '@canopy/testing';
import { EngineHarness, type Engine } from '@canopy/testing/engine-harness';

const telemetry = InMemoryTelemetry.start();
const h = new EngineHarness();
let engine: Engine;
let scope: Scope;

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
  engine.tools.register(
    defineTool({
      name: 'add',
      description: 'adds two numbers',
      input: z.object({ a: z.number(), b: z.number() }),
      handler: ({ a, b }) => String(a + b),
    }),
  );
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
afterAll(async () => {
  await h.teardown();
  await telemetry.shutdown();
});
afterEach(async () => {
  configureTelemetry({ captureMessageContent: false, userId: false });
  await telemetry.reset();
});

const CLIENT_TOOL = { name: 'pick_file', description: 'asks for a file', inputSchema: { type: 'object' } };

/** Runs `fn` inside a span standing for the HTTP request that carries a command. */
function asRequest<T>(
  name: string,
  fn: () => Promise<T>,
): Promise<{ result: T; traceId: string; spanId: string }> {
  return canopyTracer().startActiveSpan(name, async (span) => {
    try {
      const result = await fn();
      return { result, ...span.spanContext() };
    } finally {
      span.end();
    }
  });
}

async function endOf(runId: string, as = scope) {
  await eventually(async () => {
    const run = await engine.service.getRun(as, runId);
    if (!['completed', 'cancelled', 'error'].includes(run.status)) throw new Error(`run ${run.status}`);
  });
}

/** The finished spans once the run's `invoke_agent` span(s) have ended. */
async function spansOf(runId: string, executions = 1): Promise<ReadableSpan[]> {
  return eventually(async () => {
    const spans = await telemetry.spans();
    const runs = spans.filter((s) => s.name === 'invoke_agent' && s.attributes['canopy.run.id'] === runId);
    if (runs.length < executions) throw new Error(`${runs.length} invoke_agent spans so far`);
    return spans;
  });
}

const byName = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name);
const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;

describe('run spans', () => {
  it('a prompt: the request, then invoke_agent with its model calls, its tool call and its commit', async () => {
    const session = await engine.manager.create(scope, {
      model: 'mock:script',
      opts: {
        script: [{ toolCalls: [{ name: 'add', input: { a: 2, b: 3 } }] }, { text: 'it is 5' }],
        serverTools: ['add'],
      },
    });
    const { result, traceId, spanId } = await asRequest('POST /v1/sessions/:id/prompt', () =>
      engine.service.prompt(scope, session.id, { content: 'what is 2 + 3?' }),
    );
    await endOf(result.runId);
    const spans = await spansOf(result.runId);
    const mine = spans.filter((s) => s.spanContext().traceId === traceId);
    expect(spanTree(mine)).toBe(
      [
        'POST /v1/sessions/:id/prompt',
        '  invoke_agent',
        '    chat script',
        '    execute_tool add',
        '    chat script',
        '    canopy.commit',
      ].join('\n'),
    );
    const [run] = byName(mine, 'invoke_agent');
    expect(parentOf(run!)).toBe(spanId);
    expect(run!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': session.id,
      'gen_ai.provider.name': 'mock',
      'gen_ai.request.model': 'script',
      'canopy.tenant.id': scope.tenantId,
      'canopy.run.id': result.runId,
      'canopy.run.kind': 'prompt',
      'canopy.run.status': 'completed',
    });
    expect(run!.attributes['enduser.id']).toBeUndefined();
    const [first, second] = byName(mine, 'chat script');
    expect(first!.attributes['gen_ai.response.finish_reasons']).toEqual(['tool_call']);
    expect(second!.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    for (const chat of [first!, second!]) {
      expect(typeof chat.attributes['gen_ai.usage.input_tokens']).toBe('number');
      expect(typeof chat.attributes['gen_ai.usage.output_tokens']).toBe('number');
    }
    const [tool] = byName(mine, 'execute_tool add');
    expect(tool!.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'add',
      'canopy.tool.kind': 'server',
    });
    expect(tool!.attributes['gen_ai.tool.call.id']).toMatch(/.+/);
    // Content is off by default: neither the arguments nor the result.
    expect(tool!.attributes['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(tool!.attributes['gen_ai.tool.call.result']).toBeUndefined();
    expect(byName(mine, 'canopy.commit')[0]!.attributes).toMatchObject({ 'canopy.commit.stop': true });
    // Every span of the run has ended and none failed.
    expect(mine.every((s) => s.status.code !== SpanStatusCode.ERROR)).toBe(true);
  });

  it('a resumed run: its execution is a child of the decision request and links to the paused one', async () => {
    const session = await engine.manager.create(scope, {
      model: 'mock:script',
      opts: {
        script: [
          {
            toolCalls: [
              { name: 'transfer', input: { amount: 7 } },
              { name: 'pick_file', input: {} },
            ],
          },
          { text: 'done' },
        ],
        serverTools: ['transfer'],
      },
      tools: [CLIENT_TOOL],
    });
    const started = await asRequest('POST prompt', () =>
      engine.service.prompt(scope, session.id, { content: 'go' }),
    );
    await eventually(async () => {
      if ((await engine.service.get(scope, session.id)).status !== 'paused') throw new Error('not paused');
    });
    const awaiting = (await engine.service.snapshot(scope, session.id)).inFlight!.awaiting;
    const pick = awaiting.find((a) => a.name === 'pick_file')!;
    const transfer = awaiting.find((a) => a.name === 'transfer')!;
    await engine.service.resume(scope, session.id, {
      toolUseId: pick.id,
      decision: { type: 'result', content: 'report.pdf' },
    });
    const decided = await asRequest('POST resume', () =>
      engine.service.resume(scope, session.id, { toolUseId: transfer.id, decision: { type: 'execute' } }),
    );
    await endOf(started.result.runId);
    const spans = await spansOf(started.result.runId, 2);
    const [paused, resumed] = byName(spans, 'invoke_agent')
      .filter((s) => s.attributes['canopy.run.id'] === started.result.runId)
      .sort((a, b) => a.startTime[0] - b.startTime[0] || a.startTime[1] - b.startTime[1]);
    expect(paused!.spanContext().traceId).toBe(started.traceId);
    expect(parentOf(paused!)).toBe(started.spanId);
    expect(resumed!.spanContext().traceId).toBe(decided.traceId);
    expect(parentOf(resumed!)).toBe(decided.spanId);
    expect(resumed!.links).toEqual([
      expect.objectContaining({
        context: expect.objectContaining({
          traceId: paused!.spanContext().traceId,
          spanId: paused!.spanContext().spanId,
        }),
      }),
    ]);
    // The resumed execution's tool calls: the approved server tool ran, the client tool's result came back.
    const resumedSpans = spans.filter((s) => s.spanContext().traceId === decided.traceId);
    expect(spanTree(resumedSpans)).toBe(
      [
        'POST resume',
        '  invoke_agent',
        '    execute_tool transfer',
        '    execute_tool pick_file',
        '    chat script',
        '    canopy.commit',
      ].join('\n'),
    );
    expect(byName(resumedSpans, 'execute_tool pick_file')[0]!.attributes['canopy.tool.kind']).toBe('client');
    expect(byName(resumedSpans, 'execute_tool transfer')[0]!.attributes['canopy.tool.kind']).toBe('server');
  });

  it('puts message content on spans only when the operator opted in, the end user only when the tenant allows it too', async () => {
    configureTelemetry({ captureMessageContent: true, userId: true });
    const settings = new TenantSettingsRepository(h.db);
    engine.deps.tenantTelemetry = settings;
    const alice = tenantScope(scope.tenantId, { userId: 'alice' });
    // The tenant has not allowed it: no end user on the run's span.
    const first = await engine.manager.create(alice, { model: 'mock:echo' });
    const before = await engine.service.prompt(alice, first.id, { content: 'hi' });
    await endOf(before.runId, alice);
    const unallowed = byName(await spansOf(before.runId), 'invoke_agent').find(
      (s) => s.attributes['canopy.run.id'] === before.runId,
    )!;
    expect(unallowed.attributes['enduser.id']).toBeUndefined();
    await settings.update(scope, { telemetryUserId: true });
    const session = await engine.manager.create(alice, {
      model: 'mock:script',
      opts: {
        script: [{ toolCalls: [{ name: 'add', input: { a: 40, b: 2 } }] }, { text: 'forty-two' }],
        serverTools: ['add'],
      },
    });
    const { runId } = await engine.service.prompt(alice, session.id, { content: 'add 40 and 2' });
    await endOf(runId, alice);
    const spans = await spansOf(runId);
    const run = byName(spans, 'invoke_agent').find((s) => s.attributes['canopy.run.id'] === runId)!;
    expect(run.attributes['enduser.id']).toBe('alice');
    const mine = spans.filter((s) => s.spanContext().traceId === run.spanContext().traceId);
    const tool = byName(mine, 'execute_tool add')[0]!;
    expect(JSON.parse(String(tool.attributes['gen_ai.tool.call.arguments']))).toEqual({ a: 40, b: 2 });
    expect(tool.attributes['gen_ai.tool.call.result']).toBe('42');
    const chats = byName(mine, 'chat script');
    expect(String(chats[0]!.attributes['gen_ai.input.messages'])).toContain('add 40 and 2');
    expect(String(chats[1]!.attributes['gen_ai.output.messages'])).toContain('forty-two');
  });

  it('a summary the context policy writes is a canopy.summarize span with its model call under it', async () => {
    const session = await engine.manager.create(scope, {
      model: 'mock:echo',
      opts: { contextWindow: 2_000, maxOutputTokens: 200, context: { strategy: 'summarize' } },
    });
    const words = (turn: number) => Array.from({ length: 120 }, (_, i) => `word${turn}x${i}`).join(' ');
    const summarized = await eventually(
      async () => {
        const turn = Math.floor(Math.random() * 1e6);
        const { runId } = await engine.service.prompt(scope, session.id, { content: words(turn) });
        await endOf(runId);
        const spans = await telemetry.spans();
        const summary = spans.find((s) => s.name === 'canopy.summarize');
        if (!summary) throw new Error('no summary yet');
        return { summary, spans };
      },
      { timeoutMs: 30_000, intervalMs: 1 },
    );
    const { summary } = summarized;
    // The run's span ends once its execution has wound down, a moment after the run is completed.
    const { run, spans } = await eventually(async () => {
      const all = await telemetry.spans();
      const found = all.find((s) => s.spanContext().spanId === parentOf(summary));
      if (!found) throw new Error('the run has not ended its span yet');
      return { run: found, spans: all };
    });
    expect(run.name).toBe('invoke_agent');
    const calls = spans.filter((s) => parentOf(s) === summary.spanContext().spanId).map((s) => s.name);
    expect(calls).toEqual(['chat echo']);
    expect(summary.attributes['canopy.summary.messages']).toBeGreaterThan(0);
  });
});
