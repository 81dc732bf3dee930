import { CanopyException } from '@canopy/common';
import { tenantScope, userMessage } from '@canopy/core';
import { HookRegistry } from '../hooks/hook-registry';
import { MockGateway } from '../model/mock.gateway';
import { ToolRegistry } from '../tools/tool-registry';
import { DEFAULT_RETRY_POLICY } from './retry';
import { runTurn, type RunIO, type RunSpec } from './turn-runner';

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
