// The acting caller (the per-turn context hooks and server tools get) over the public API: a run records who started it (GET /v1/runs/:id
// `actor`), and its hooks and server tools act in that caller's scope — a tenant key's (with the key's id), an
// end user's (with the user id) — with the turn's user message, context, injections and ids. A resume that
// approves a tool runs it (and the turn that follows) as the approver; a decision that expires is the system's.

import { z } from 'zod';
import { HookRegistry, ToolRegistry, type AgentTurn } from '@canopy/agent';
import { messageText, type Scope } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';
import type { RunView, TurnResult } from './support/views';

/** What a hook or tool saw of its turn. */
interface Seen {
  where: 'pre' | 'post' | 'whoami' | 'guarded';
  scope: { tenantId: string; userId?: string; keyId?: string; system: boolean };
  userText: string | null;
  turnRef: string;
  step: number;
  toolCallId: string | null;
  injections: string[];
  /** The text of the last user message of the context (the injections are added to it). */
  lastUserContent: string[];
  assistantText: string | null;
}

const seen = new Map<string, Seen[]>();

function record(where: Seen['where'], turn: AgentTurn): void {
  const lastUser = [...turn.context].reverse().find((m) => m.role === 'user');
  const scope: Scope = turn.scope;
  const entry: Seen = {
    where,
    scope: {
      tenantId: scope.tenantId,
      ...(scope.userId !== undefined ? { userId: scope.userId } : {}),
      ...(scope.keyId !== undefined ? { keyId: scope.keyId } : {}),
      system: scope.system,
    },
    userText: turn.userMessage ? messageText(turn.userMessage) : null,
    turnRef: turn.turnRef,
    step: turn.step,
    toolCallId: turn.toolCallId,
    injections: turn.injections.flatMap((b) => (b.type === 'text' ? [b.text] : [])),
    lastUserContent: lastUser?.content.flatMap((b) => (b.type === 'text' ? [b.text] : [])) ?? [],
    assistantText: turn.assistantMessage ? messageText(turn.assistantMessage) : null,
  };
  seen.set(turn.sessionId, [...(seen.get(turn.sessionId) ?? []), entry]);
}

/** Registers the recording tools and hooks on an app. */
function instrument(app: TestApp): void {
  const tools = app.app.get(ToolRegistry);
  tools.register({
    name: 'whoami',
    description: 'Tells who acts',
    input: z.object({}),
    handler: (_input, turn) => {
      record('whoami', turn);
      return 'you are you';
    },
  });
  tools.register({
    name: 'guarded',
    description: 'Needs approval',
    input: z.object({}),
    approval: true,
    handler: (_input, turn) => {
      record('guarded', turn);
      return 'guarded ran';
    },
  });
  const hooks = app.app.get(HookRegistry);
  hooks.register({
    name: 'note',
    phase: 'pre',
    mode: 'sequential',
    run: () => ({ action: 'continue', inject: [{ type: 'text', text: 'note: be kind' }] }),
  });
  hooks.register({
    name: 'observe',
    phase: 'pre',
    mode: 'sequential',
    run: (turn) => {
      record('pre', turn);
      turn.reportProgress('ignored: no tool call here');
      return { action: 'continue' };
    },
  });
  hooks.register({
    name: 'observe-post',
    phase: 'post',
    run: (turn) => {
      record('post', turn);
      return { action: 'continue' };
    },
  });
}

const SCRIPT = {
  serverTools: ['whoami', 'guarded'],
  script: [{ text: 'Checking.', toolCalls: [{ name: 'whoami', input: {} }] }, { text: 'done' }],
};
const GUARDED = {
  serverTools: ['whoami', 'guarded'],
  script: [{ toolCalls: [{ name: 'guarded', input: {} }] }, { text: 'approved and done' }],
};

describe('a run acts as its caller', () => {
  let t: TestApp;
  let tenantId: string;
  let keyApi: Api;
  let keyId: string;
  let keyApiKey: string;

  beforeAll(async () => {
    t = await startTestApp();
    instrument(t);
    const tenant = await newTenant(t, 'acting');
    tenantId = tenant.tenantId;
    // A second key, whose id the admin route tells.
    const key = await new Api(t.url, TEST_ADMIN_KEY).post(`/v1/admin/tenants/${tenantId}/keys`, {
      name: 'ops',
    });
    keyId = key.body.id;
    keyApiKey = key.body.apiKey;
    keyApi = new Api(t.url, keyApiKey);
  });

  afterAll(async () => {
    await t?.close();
  });

  async function tokenFor(userId: string): Promise<Api> {
    const minted = await keyApi.post('/v1/tokens', { userId });
    expect(minted.status).toBe(201);
    return new Api(t.url, minted.body.token);
  }

  it('runs hooks and tools as the tenant key that prompted, with the turn’s fields', async () => {
    const session = (await keyApi.post('/v1/sessions', { model: 'mock:script', opts: SCRIPT })).body;
    const res = await keyApi.post<TurnResult>(`/v1/sessions/${session.id}/prompt`, {
      content: 'who am i?',
      wait: true,
    });
    expect(res.body).toMatchObject({ status: 'completed', finalResponse: 'done' });
    const run = await keyApi.get<RunView>(`/v1/runs/${res.body.runId}`);
    expect(run.body.actor).toEqual({ type: 'key', keyId });

    const keyScope = { tenantId, keyId, system: false };
    const all = seen.get(session.id)!;
    expect(all.map((s) => s.where)).toEqual(['pre', 'post', 'whoami', 'pre', 'post']);
    for (const s of all) expect(s).toMatchObject({ scope: keyScope, userText: 'who am i?' });
    const [pre, post, tool, pre2] = all as [Seen, Seen, Seen, Seen];
    // One turn: one opaque ref for all of it.
    expect(new Set(all.map((s) => s.turnRef)).size).toBe(1);
    // Pre-hooks see the injections of the hooks before them, not yet in the context.
    expect(pre).toMatchObject({ injections: ['note: be kind'], lastUserContent: ['who am i?'] });
    expect(pre).toMatchObject({ toolCallId: null, assistantText: null, step: 0 });
    // Post-hooks and tools see what the model was sent, injections included.
    expect(post).toMatchObject({ assistantText: 'Checking.', toolCallId: null, step: 0 });
    expect(post.lastUserContent).toEqual(['who am i?', 'note: be kind']);
    expect(tool).toMatchObject({ assistantText: null, injections: ['note: be kind'], step: 0 });
    expect(tool.toolCallId).toMatch(/^toolu_/);
    expect(res.body.items).toContainEqual(
      expect.objectContaining({ type: 'tool_call', toolId: tool.toolCallId }),
    );
    expect(pre2.step).toBe(1);
  });

  it('runs them as the end user whose token prompted (userId visible), and records that user', async () => {
    const session = (
      await keyApi.post('/v1/sessions', { model: 'mock:script', opts: SCRIPT, userId: 'alice' })
    ).body;
    const alice = await tokenFor('alice');
    const res = await alice.post<TurnResult>(`/v1/sessions/${session.id}/prompt`, {
      content: 'hi, it is alice',
      wait: true,
    });
    expect(res.body.status).toBe('completed');
    expect((await alice.get<RunView>(`/v1/runs/${res.body.runId}`)).body.actor).toEqual({
      type: 'user',
      userId: 'alice',
    });
    const all = seen.get(session.id)!;
    expect(all.length).toBeGreaterThan(0);
    for (const s of all) {
      expect(s.scope).toEqual({ tenantId, userId: 'alice', system: false });
      expect(s.userText).toBe('hi, it is alice');
    }
  });

  it('runs an approved tool, and the turn after it, as the user who approved it', async () => {
    const session = (
      await keyApi.post('/v1/sessions', { model: 'mock:script', opts: GUARDED, userId: 'bob' })
    ).body;
    const paused = await keyApi.post<TurnResult>(`/v1/sessions/${session.id}/prompt`, {
      content: 'do the guarded thing',
      wait: true,
    });
    expect(paused.body).toMatchObject({ status: 'paused' });
    const bob = await tokenFor('bob');
    const resumed = await bob.post<TurnResult>(`/v1/sessions/${session.id}/resume`, {
      decision: { type: 'execute' },
      wait: true,
    });
    expect(resumed.body).toMatchObject({ status: 'completed', finalResponse: 'approved and done' });

    const all = seen.get(session.id)!;
    expect(all.map((s) => s.where)).toEqual(['pre', 'post', 'guarded', 'pre', 'post']);
    const keyScope = { tenantId, keyId, system: false };
    const bobScope = { tenantId, userId: 'bob', system: false };
    expect(all.slice(0, 2).map((s) => s.scope)).toEqual([keyScope, keyScope]);
    expect(all.slice(2).map((s) => s.scope)).toEqual([bobScope, bobScope, bobScope]);
    for (const s of all) expect(s.userText).toBe('do the guarded thing');
    // Who started the run stays who started it.
    expect((await keyApi.get<RunView>(`/v1/runs/${resumed.body.runId}`)).body.actor).toEqual({
      type: 'key',
      keyId,
    });
  });
});

describe('a decision that expires', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ env: { RUN_DECISION_TIMEOUT_MS: '1000' } });
    instrument(t);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('continues the run under the system scope: the timer acts, not the caller', async () => {
    const { api, tenantId } = await newTenant(t, 'expiry');
    const session = (await api.post('/v1/sessions', { model: 'mock:script', opts: GUARDED })).body;
    const paused = await api.post<TurnResult>(`/v1/sessions/${session.id}/prompt`, {
      content: 'nobody will answer',
      wait: true,
    });
    expect(paused.body.status).toBe('paused');
    const run = await eventually(
      async () => {
        const r = (await api.get<RunView>(`/v1/runs/${paused.body.runId}`)).body;
        expect(r.status).toBe('completed');
        return r;
      },
      { timeoutMs: 15_000 },
    );
    expect(run.actor).toMatchObject({ type: 'key' });
    const all = seen.get(session.id)!;
    // The guarded tool never ran (rejected as expired); the step after the expiry ran as the system.
    expect(all.map((s) => s.where)).toEqual(['pre', 'post', 'pre', 'post']);
    expect(all[0]!.scope).toMatchObject({ tenantId, system: false, keyId: expect.any(String) });
    expect(all[2]!.scope).toEqual({ tenantId, system: true });
    expect(all[3]!.scope).toEqual({ tenantId, system: true });
    expect(all[2]!.userText).toBe('nobody will answer');
    const messages = (await api.get(`/v1/sessions/${session.id}/messages`)).body.data as Array<{
      content: Array<{ type: string; content?: unknown }>;
    }>;
    expect(JSON.stringify(messages)).toContain('expired');
  });
});
