import { CanopyException } from '@canopy/common';
import { assistantMessage, makeUsage, tenantScope, userMessage, type Message } from '@canopy/core';
import { tokenCounterFor } from '../context/tokens';
import { HookRegistry } from '../hooks/hook-registry';
import { MockGateway } from '../model/mock.gateway';
import type { ModelGateway, ModelRequest, ModelStreamPart } from '../model/model-gateway.port';
import { ToolRegistry } from '../tools/tool-registry';
import { DEFAULT_RETRY_POLICY } from './retry';
import { MAX_CALIBRATION, runTurn, type RunIO, type RunSpec } from './turn-runner';

const deps = {
  gateway: new MockGateway(),
  tools: new ToolRegistry(),
  hooks: new HookRegistry({ parallelTimeoutMs: 500, injectionBudgetTokens: 200 }),
  toolTimeoutMs: 1_000,
  retry: DEFAULT_RETRY_POLICY,
};

function spec(): RunSpec {
  return {
    scope: tenantScope('00000000-0000-4000-8000-000000000001'),
    sessionId: 's',
    runId: 'r',
    model: 'mock:echo',
    system: null,
    opts: {},
    clientTools: [],
    serverTools: [],
    maxSteps: 4,
    history: [],
    start: { type: 'prompt', message: userMessage('hello there') },
    signal: new AbortController().signal,
  };
}

/** An io whose commit fails with `err` (what the session layer's store or event bus threw). */
function failingCommit(err: Error): RunIO {
  return {
    emit: () => undefined,
    commit: () => Promise.reject(err),
    pause: () => Promise.resolve(),
  };
}

describe('runTurn: how a failure ends the run', () => {
  it.each([
    ['Redis did not answer in time', new Error('Command timed out')],
    ['the Redis connection closed', new Error('Connection is closed.')],
    ['the database is unavailable', new CanopyException('unavailable', 'the database is unavailable')],
  ])('%s: error `unavailable` (the prompt can be sent again), not `internal`', async (_, err) => {
    const outcome = await runTurn(spec(), failingCommit(err), deps);
    expect(outcome).toMatchObject({ status: 'error', code: 'unavailable' });
    expect((outcome as { message: string }).message).toContain(err.message);
  });

  it('anything else: error `internal`', async () => {
    const outcome = await runTurn(spec(), failingCommit(new TypeError('x is undefined')), deps);
    expect(outcome).toMatchObject({
      status: 'error',
      code: 'internal',
      message: 'the run failed: x is undefined',
    });
  });
});

describe('runTurn: counting against the window', () => {
  /**
   * A gateway that answers "ok" and reports `reported(request)` input tokens, recording each request's messages
   * (a unit test of the runner's arithmetic: the real providers are in the e2e tests).
   */
  function reportingGateway(reported: (messages: readonly Message[]) => number) {
    const requests: Message[][] = [];
    const gateway: ModelGateway = {
      check: () => null,
      // eslint-disable-next-line @typescript-eslint/require-await -- an async generator with nothing to await
      stream: async function* (request: ModelRequest): AsyncGenerator<ModelStreamPart> {
        requests.push([...request.messages]);
        yield {
          type: 'finish',
          message: assistantMessage('ok', 1),
          usage: makeUsage({ inputTokens: reported(request.messages), outputTokens: 1 }),
          finishReason: 'stop',
        };
      },
    };
    return { gateway, requests };
  }

  const io = (heard: Array<number | undefined>): RunIO => ({
    emit: () => undefined,
    commit: () => Promise.resolve(null),
    pause: () => Promise.resolve(),
    calibrated: (c) => heard.push(c),
  });

  /** A history of `turns` prompts and replies of some 50 tokens each. */
  const history = (turns: number): Message[] =>
    Array.from({ length: turns }, (_, i) => [
      userMessage(`question ${i}: ${'word '.repeat(45)}`, i),
      assistantMessage(`answer ${i}: ${'word '.repeat(45)}`, i),
    ]).flat();

  const limits = () => ({ contextWindow: 1_000, maxOutputTokens: 100 });
  const truncating = (extra: Partial<RunSpec>): RunSpec => ({
    ...spec(),
    model: 'openai:gpt-4o',
    opts: { context: { strategy: 'truncate' } },
    ...extra,
  });

  it('takes the counts stored with the history as they are, counting only what is new', async () => {
    const { gateway, requests } = reportingGateway(() => 0);
    const past = history(10);
    // Stored counts of 300 each: only three messages fit 900 tokens; counted afresh, all twenty would.
    const outcome = await runTurn(truncating({ history: past, historyTokens: past.map(() => 300) }), io([]), {
      ...deps,
      gateway,
      limits,
    });
    expect(outcome.status).toBe('completed');
    // The last turn of the history (two messages at 300) and the prompt: 600 + the prompt.
    expect(requests[0]).toHaveLength(3);
    expect(requests[0]!.at(-1)).toMatchObject({ role: 'user' });
  });

  it('is raised by what the provider reports, at most twice, and says so', async () => {
    const past = history(6);
    // Counted afresh, the twelve messages and the prompt (~650 tokens) fit the 900 the window leaves.
    const plain = reportingGateway(() => 0);
    await runTurn(truncating({ history: past }), io([]), { ...deps, gateway: plain.gateway, limits });
    expect(plain.requests[0]).toHaveLength(13);

    // A session calibrated at 1.5: the same request would be ~975, over the budget; the oldest turns go.
    const raised = reportingGateway(() => 0);
    await runTurn(truncating({ history: past, calibration: 1.5 }), io([]), {
      ...deps,
      gateway: raised.gateway,
      limits,
    });
    expect(raised.requests[0]!.length).toBeLessThan(13);
    expect(raised.requests[0]!.length % 2).toBe(1);

    // A provider reporting three times the count: the calibration heard is 2 (the most it is taken at).
    const heard: Array<number | undefined> = [];
    const counter = tokenCounterFor('openai:gpt-4o');
    const tripled = reportingGateway((messages) => 3 * messages.reduce((n, m) => n + counter.message(m), 0));
    await runTurn(truncating({ history: past }), io(heard), { ...deps, gateway: tripled.gateway, limits });
    expect(heard).toEqual([MAX_CALIBRATION]);

    // A report under the count: a calibrated session goes back to its counts.
    const heardAgain: Array<number | undefined> = [];
    const under = reportingGateway(() => 10);
    await runTurn(truncating({ history: past, calibration: 1.5 }), io(heardAgain), {
      ...deps,
      gateway: under.gateway,
      limits,
    });
    expect(heardAgain).toEqual([undefined]);
  });
});
