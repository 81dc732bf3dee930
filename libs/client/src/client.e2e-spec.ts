// The SDK against the real service, booted in the test on its own Postgres database: every route through the
// typed client, runs as TurnResults, typed errors, event streams that survive the server ending them, and live
// turns that follow a streaming reply, a regeneration and navigation.

import WebSocket from 'ws';
import { z } from 'zod';

import { eventually } from '@canopy/testing/eventually';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { Canopy, CanopyError, isCanopyError, type ActivityEvent, type SessionEventBody } from './index';

let t: TestApp;
let admin: Canopy;
let canopy: Canopy;
let tenantKey: string;

beforeAll(async () => {
  t = await startTestApp({ env: { SESSION_IDLE_SHUTDOWN_MS: '60000' } });
  admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
  const tenant = await admin.admin.createTenant('sdk tenant');
  tenantKey = tenant.apiKey;
  canopy = new Canopy({ baseUrl: t.url, credential: tenantKey });
});

afterAll(async () => {
  await t?.close();
});

/** Collects a stream's items in the background until `stop` says so (or the signal aborts). */
function collect<T>(iterable: AsyncIterable<T>, stop: (items: T[]) => boolean) {
  const items: T[] = [];
  const done = (async () => {
    for await (const item of iterable) {
      items.push(item);
      if (stop(items)) return items;
    }
    return items;
  })();
  return { items, done };
}

describe('sessions and runs', () => {
  it('creates, lists, reads, updates, runs, closes and deletes a session', async () => {
    const { session, info } = await canopy.sessions.create({
      model: 'mock:echo',
      metadata: { team: 'sdk' },
    });
    expect(info).toMatchObject({ id: session.id, model: 'mock:echo', status: 'idle', title: null });

    const result = await session.run('hello there');
    expect(result.finalResponse).toBe('Echo: hello there');
    expect(result.isError).toBe(false);
    expect(result.numTurns).toBe(1);
    expect(result.messages.map((m) => [m.role, m.text])).toEqual([
      ['user', 'hello there'],
      ['assistant', 'Echo: hello there'],
    ]);
    expect(result.toolCalls).toEqual([]);
    expect(result.toJSON()).toMatchObject({ sessionId: session.id, finalResponse: 'Echo: hello there' });

    const detail = await session.get();
    expect(detail).toMatchObject({
      id: session.id,
      status: 'idle',
      title: 'hello there',
      path: [1, 2],
      head: 2,
    });
    expect(await session.messages()).toHaveLength(2);
    const tree = await session.tree();
    expect(tree.nodes.map((n) => n.id)).toEqual([1, 2]);
    expect(tree.roots).toEqual([1]);
    const turns = await session.getTurns();
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({ id: 1, resId: 2, status: 'complete' });

    const page = await canopy.sessions.list({ metadata: { team: 'sdk' } });
    expect(page.data.map((s) => s.id)).toEqual([session.id]);
    const renamed = await session.update({ title: 'renamed', metadata: { team: 'sdk', v: 2 } });
    expect(renamed.title).toBe('renamed');

    await session.close();
    await session.close(); // idempotent
    await session.delete();
    await expect(session.get()).rejects.toMatchObject({ code: 'not_found', status: 404 });
  });

  it('branches, regenerates, edits and navigates, and reads runs', async () => {
    const { session } = await canopy.sessions.create({ model: 'mock:echo' });
    await session.run('one');
    await session.run('two'); // nodes 3, 4
    const regen = await session.branchAndWait(3); // a new reply to "two": node 5
    expect(regen.finalResponse).toBe('Echo: two');
    const edited = await session.branchAndWait(2, 'two, edited'); // nodes 6, 7
    expect(edited.finalResponse).toBe('Echo: two, edited');
    let turns = await session.getTurns();
    expect(turns[1]).toMatchObject({ id: 6, edits: [3, 6] });

    expect(await session.children(2)).toEqual([3, 6]);
    expect(await session.siblings(6)).toEqual([3]);
    expect(await session.pathTo(7)).toEqual([1, 2, 6, 7]);
    expect((await session.node(7)).message.role).toBe('assistant');
    expect(await session.getTurn(6)).toMatchObject({ id: 6, resId: 7 });
    await expect(session.getTurn(3)).rejects.toMatchObject({ code: 'not_found' });

    const moved = await session.navigate(3);
    expect(moved.path.slice(0, 3)).toEqual([1, 2, 3]);
    turns = await session.getTurns();
    expect(turns[1]).toMatchObject({ id: 3, regens: [4, 5] });

    const accepted = await session.regenerate(1);
    const run = await eventuallyRun(canopy, accepted.runId);
    expect(run).toMatchObject({
      id: accepted.runId,
      sessionId: session.id,
      kind: 'branch',
      status: 'completed',
    });
    expect(run.attempts).toBe(1);
  });

  it('parses a JSON final response with a schema, and pauses and resumes on a client tool', async () => {
    const { session } = await canopy.sessions.create({
      model: 'mock:script',
      tools: [{ name: 'pick', description: 'Pick a colour', inputSchema: { type: 'object' } }],
      opts: {
        script: [
          { text: '```json\n{"colour": "green", "count": 3}\n```' },
          { toolCalls: [{ name: 'pick', input: { from: ['red', 'green'] } }] },
          { text: 'You picked green' },
        ],
      },
    });
    const json = await session.run('give me json');
    const Shape = z.object({ colour: z.string(), count: z.number() });
    expect(json.parse(Shape)).toEqual({ colour: 'green', count: 3 });
    expect(json.tryParse(z.object({ colour: z.number() }))).toBeNull();

    const paused = await session.run('pick one');
    expect(paused.toolCalls).toEqual([
      expect.objectContaining({ toolName: 'pick', parameters: { from: ['red', 'green'] } }),
    ]);
    expect((await session.get()).status).toBe('paused');
    await expect(session.prompt('not now')).rejects.toMatchObject({ code: 'session_paused', status: 409 });

    const resumed = await session.resume({ type: 'result', content: 'green' });
    expect(resumed.runId).toEqual(expect.any(String));
    await eventuallyIdle(session);
    const messages = await session.messages();
    expect(messages.at(-1)?.content).toEqual([{ type: 'text', text: 'You picked green' }]);
  });
});

describe('errors', () => {
  it('are typed by the API error codes', async () => {
    const { session } = await canopy.sessions.create({
      model: 'mock:script',
      opts: { script: [{ text: 'slow reply with several words', delayMs: 100 }] },
    });
    await session.prompt('go');
    const busy = await session.prompt('again').catch((e: unknown) => e);
    expect(busy).toBeInstanceOf(CanopyError);
    expect(isCanopyError(busy, 'session_busy')).toBe(true);
    expect(busy).toMatchObject({ status: 409, requestId: expect.any(String) });
    await session.cancel();
    await eventuallyIdle(session);
    await expect(session.cancel()).rejects.toMatchObject({ code: 'idle' });

    const bad = await canopy.sessions.create({ model: '' }).catch((e: unknown) => e);
    expect(bad).toMatchObject({ code: 'bad_request', status: 400 });
    expect((bad as CanopyError).details).not.toBeNull();

    await expect(canopy.session('nope-nope').get()).rejects.toMatchObject({ code: 'not_found' });
    await expect(session.navigate(999)).rejects.toMatchObject({ code: 'not_found' });

    const stranger = new Canopy({ baseUrl: t.url, credential: 'ck_not-a-real-key' });
    await expect(stranger.sessions.list()).rejects.toMatchObject({ code: 'unauthorized', status: 401 });
    await expect(canopy.admin.createTenant('x')).rejects.toMatchObject({ code: 'forbidden', status: 403 });
  });

  it('hides other tenants and other users: not_found', async () => {
    const other = await admin.admin.createTenant('other tenant');
    const otherClient = new Canopy({ baseUrl: t.url, credential: other.apiKey });
    const { session } = await otherClient.sessions.create({ model: 'mock:echo' });
    await expect(canopy.session(session.id).get()).rejects.toMatchObject({ code: 'not_found' });

    const { token } = await canopy.tokens.create('user-a', 600);
    const asUser = new Canopy({ baseUrl: t.url, credential: token });
    const mine = await asUser.sessions.create({ model: 'mock:echo' });
    expect(mine.info.userId).toBe('user-a');
    const { session: notMine } = await canopy.sessions.create({ model: 'mock:echo', userId: 'user-b' });
    await expect(asUser.session(notMine.id).get()).rejects.toMatchObject({ code: 'not_found' });
    expect((await asUser.sessions.list()).data.map((s) => s.id)).toEqual([mine.session.id]);
  });

  it('reports an unreachable service as network_error after its retries', async () => {
    const nowhere = new Canopy({
      baseUrl: 'http://127.0.0.1:9',
      credential: tenantKey,
      maxRetries: 2,
      retryDelayMs: 10,
    });
    const started = Date.now();
    await expect(nowhere.sessions.list()).rejects.toMatchObject({ code: 'network_error', status: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(30); // 10 + 20 ms of backoff
    // A command is not idempotent: one attempt only.
    await expect(nowhere.session('x').prompt('hi')).rejects.toMatchObject({ code: 'network_error' });
  });
});

describe('stats', () => {
  it('counts runs per minute and usage per tenant: a tenant its own, the admin every tenant', async () => {
    const a = await admin.admin.createTenant('stats a');
    const b = await admin.admin.createTenant('stats b');
    const clientA = new Canopy({ baseUrl: t.url, credential: a.apiKey });
    const clientB = new Canopy({ baseUrl: t.url, credential: b.apiKey });
    const before = await clientA.stats(5);
    expect(before.usageByTenant).toEqual([]);
    for (const text of ['one two', 'three']) {
      const { session } = await clientA.sessions.create({ model: 'mock:echo' });
      await session.run(text);
    }
    const failing = await clientA.sessions.create({
      model: 'mock:script',
      opts: { script: [{ error: 'model exploded' }] },
    });
    await failing.session.run('fail please');
    await (await clientB.sessions.create({ model: 'mock:echo' })).session.run('b');

    const mine = await clientA.stats(5);
    const sum = (key: 'started' | 'finished' | 'failed') => mine.perMinute.reduce((n, m) => n + m[key], 0);
    expect({ started: sum('started'), finished: sum('finished'), failed: sum('failed') }).toEqual({
      started: 3,
      finished: 3,
      failed: 1,
    });
    expect(mine.usageByTenant).toEqual([
      expect.objectContaining({
        tenantId: a.id,
        tenantName: 'stats a',
        runs: 3,
        outputTokens: expect.any(Number),
      }),
    ]);
    expect(mine.usageByTenant[0]!.totalTokens).toBeGreaterThan(0);
    expect(Date.parse(mine.since)).toBeLessThanOrEqual(Date.parse(mine.until) - 4 * 60_000);

    const all = await admin.stats(5);
    const names = all.usageByTenant.map((u) => u.tenantName);
    expect(names).toEqual(expect.arrayContaining(['stats a', 'stats b']));

    await expect(clientA.stats(0)).rejects.toMatchObject({ code: 'bad_request' });
    await expect(clientA.stats(1441)).rejects.toMatchObject({ code: 'bad_request' });
    const { token } = await clientA.tokens.create('someone');
    const asUser = new Canopy({ baseUrl: t.url, credential: token });
    await expect(asUser.stats()).rejects.toMatchObject({ code: 'forbidden' });
  });
});

describe('retries', () => {
  let limited: TestApp;
  afterAll(async () => {
    await limited?.close();
  });

  it('retries a refused prompt (429) after Retry-After, and reports it when out of retries', async () => {
    limited = await startTestApp({ env: { MAX_CONCURRENT_RUNS_PER_TENANT: '1' } });
    const root = new Canopy({ baseUrl: limited.url, credential: TEST_ADMIN_KEY });
    const { apiKey } = await root.admin.createTenant('one run at a time');
    const patient = new Canopy({ baseUrl: limited.url, credential: apiKey });
    const impatient = new Canopy({ baseUrl: limited.url, credential: apiKey, maxRetries: 0 });
    const slow = await patient.sessions.create({
      model: 'mock:script',
      opts: { script: [{ text: 'a b c d e', delayMs: 60 }] },
    });
    const other = await patient.sessions.create({ model: 'mock:echo' });

    await slow.session.prompt('go'); // busy for ~300 ms: the tenant's one run
    const refused = await impatient
      .session(other.session.id)
      .prompt('now')
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'rate_limited', status: 429, retryAfterMs: 1000 });

    const started = Date.now();
    const result = await patient.session(other.session.id).run('when you can');
    expect(result.finalResponse).toBe('Echo: when you can');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900); // waited for Retry-After once
  });
});

describe('live', () => {
  it('streams a snapshot then every event in order, and resumes after the server ended the stream', async () => {
    const { session } = await canopy.sessions.create({ model: 'mock:echo' });
    await session.run('first');
    const controller = new AbortController();
    const stores = (items: SessionEventBody[]) =>
      items.filter((e) => e.type === 'store' && e.data.kind === 'tree').length;
    const stream = collect(session.events({ signal: controller.signal }), (items) => stores(items) >= 2);

    await until(() => stream.items.length > 0);
    expect(stream.items[0]?.type).toBe('snapshot');
    await session.run('second');
    // The server ends every subscription of a closed session (with reconnect: true): the client reconnects
    // with `after` and gets the third run's events exactly once.
    await session.close();
    await session.run('third');
    const items = await stream.done;
    controller.abort();

    const seqs = items.slice(1).map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
    expect(seqs[0]).toBeGreaterThan(items[0]!.seq);
    const texts = items
      .filter((e) => e.type === 'text_delta')
      .map((e) => (e.type === 'text_delta' ? e.data.delta : ''))
      .join('');
    expect(texts).toBe('Echo: second' + 'Echo: third');
    expect(items.filter((e) => e.type === 'snapshot')).toHaveLength(1);

    // `after`: exactly the events after a seq, no snapshot.
    const secondStore = items.find((e) => e.type === 'store')!;
    const tail = collect(
      session.events({ after: secondStore.seq, signal: AbortSignal.timeout(10_000) }),
      (got) => got.some((e) => e.type === 'store'),
    );
    const replayed = await tail.done;
    expect(replayed[0]?.type).not.toBe('snapshot');
    expect(replayed[0]!.seq).toBeGreaterThan(secondStore.seq);
  });

  it('keeps live turns current through a streaming reply, a regeneration and navigation', async () => {
    const { session } = await canopy.sessions.create({
      model: 'mock:script',
      // A regeneration plays the same entry (its context has no assistant message yet): the same text again.
      opts: { script: [{ text: 'alpha beta gamma delta', delayMs: 40 }] },
    });
    const live = session.turns();
    const seen: string[] = [];
    live.onEvent((e) => seen.push(e.type));
    try {
      const first = await live.ready();
      expect(first.turns).toEqual([]);
      await session.prompt('tell me');
      const streaming = await live.until((v) => v.turns[0]?.status === 'streaming' && textOf(v) !== '');
      expect(streaming.turns[0]).toMatchObject({ id: null, userText: [{ type: 'text', text: 'tell me' }] });
      expect('alpha beta gamma delta'.startsWith(textOf(streaming))).toBe(true);
      const done = await live.until((v) => v.turns[0]?.status === 'complete');
      expect(done.turns[0]).toMatchObject({ id: 1, resId: 2, regens: [2] });
      expect(textOf(done)).toBe('alpha beta gamma delta');
      expect(done.session.status).toBe('idle');

      await session.regenerate(1);
      // While it streams, the new reply belongs to the turn of node 1 (no second turn).
      const regenerating = await live.until(
        (v) => v.session.status === 'busy' && v.turns[0]?.status === 'streaming' && textOf(v) !== '',
      );
      expect(regenerating.turns).toHaveLength(1);
      expect(regenerating.turns[0]).toMatchObject({ id: 1, status: 'streaming' });
      const regenerated = await live.until(
        (v) => v.turns[0]?.regens.length === 2 && v.session.status === 'idle',
      );
      expect(regenerated.turns[0]).toMatchObject({ id: 1, resId: 3, regens: [2, 3], status: 'complete' });
      expect(textOf(regenerated)).toBe('alpha beta gamma delta');
      expect(regenerated.turns).toHaveLength(1);

      await session.navigate(2);
      const back = await live.until((v) => v.turns[0]?.resId === 2);
      expect(back.turns[0]).toMatchObject({ id: 1, resId: 2, regens: [2, 3] });
      expect(seen[0]).toBe('snapshot');
      expect(seen.filter((type) => type === 'tree').length).toBeGreaterThanOrEqual(3); // commit, regen, navigate
    } finally {
      await live.close();
    }
  });

  it('fails live turns of a session that does not exist with not_found', async () => {
    const live = canopy.session('no-such-session').turns();
    await expect(live.ready(5_000)).rejects.toMatchObject({ code: 'not_found' });
    await live.close();
  });

  it('lists live sessions and streams the activity feed', async () => {
    const controller = new AbortController();
    const feed = collect(canopy.activity({ signal: controller.signal }), (items: ActivityEvent[]) =>
      items.some((e) => e.type === 'run_finished'),
    );
    // The feed's subscription is in place once it carries an event: a probe session is opened (and closed again)
    // until the feed shows it opening.
    const { session: probe } = await canopy.sessions.create({ model: 'mock:echo' });
    await until(async () => {
      await probe.open();
      await probe.close();
      return feed.items.some((e) => e.type === 'opened' && e.data.id === probe.id);
    });
    const { session } = await canopy.sessions.create({ model: 'mock:echo' });
    const live = session.turns();
    try {
      await live.ready();
      const entry = await canopy.live.get(session.id);
      expect(entry).toMatchObject({ id: session.id, controllers: 1, status: 'idle' });
      expect((await canopy.live.list()).map((e) => e.id)).toContain(session.id);
      // The admin key sees every tenant's live sessions, each with its tenant.
      const everywhere = await admin.live.list();
      expect(everywhere.find((e) => e.id === session.id)).toMatchObject({ tenantId: expect.any(String) });
      await session.run('ping');
      const events = await feed.done;
      controller.abort();
      const mine = events.filter((e) => e.data.id === session.id).map((e) => e.type);
      expect(mine).toEqual(expect.arrayContaining(['opened', 'run_started', 'run_finished']));
      const finished = events.find((e) => e.type === 'run_finished');
      expect(finished).toMatchObject({ tenantId: expect.any(String), data: { status: 'completed' } });
    } finally {
      await live.close();
    }
    await session.close();
    expect(await canopy.live.get(session.id)).toBeNull();
  });
});

describe('WebSocket', () => {
  it('multiplexes subscriptions and commands, and resubscribes after the server ended a subscription', async () => {
    const socket = canopy.connect({ WebSocket });
    const activity: ActivityEvent[] = [];
    const stopActivity = socket.activity((e) => activity.push(e));
    try {
      const { session } = await canopy.sessions.create({ model: 'mock:echo' });
      const events: SessionEventBody[] = [];
      socket.subscribe(session.id, (e) => events.push(e));
      await until(() => events.length > 0 && socket.status === 'open');
      expect(events[0]?.type).toBe('snapshot');

      const accepted = await socket.command<{ runId: string }>('prompt', session.id, { content: 'over ws' });
      expect(accepted.runId).toEqual(expect.any(String));
      await until(() => events.some((e) => e.type === 'store'));
      const refused = await socket.command('cancel', session.id).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(CanopyError);
      expect(refused).toMatchObject({ code: 'idle' });

      const opened = () => activity.filter((e) => e.type === 'opened' && e.data.id === session.id).length;
      const openedBefore = opened();
      await session.close(); // the server ends the subscription; the socket subscribes again after its last seq
      // Its resubscription opens the session again: the activity feed says so.
      await until(() => socket.status === 'open' && opened() > openedBefore);
      await session.run('again');
      await until(() => events.filter((e) => e.type === 'store').length >= 2);
      const seqs = events.slice(1).map((e) => e.seq);
      expect(new Set(seqs).size).toBe(seqs.length);
      expect([...seqs].sort((a, b) => a - b)).toEqual(seqs);
      const text = events.map((e) => (e.type === 'text_delta' ? e.data.delta : '')).join('');
      expect(text).toBe('Echo: over ws' + 'Echo: again');
      await until(() => activity.some((e) => e.type === 'run_finished' && e.data.id === session.id));
    } finally {
      stopActivity();
      socket.close();
    }
    expect(socket.status).toBe('closed');
  });

  it('stops for good, with the error, when its key is revoked; so does a session’s event stream', async () => {
    const created = await canopy.keys.create({ name: 'revoked by the test' });
    const doomed = new Canopy({ baseUrl: t.url, credential: created.apiKey });
    const { session } = await doomed.sessions.create({ model: 'mock:echo' });
    const socket = doomed.connect({ WebSocket, reconnectDelayMs: 50 });
    const states: string[] = [];
    socket.onState((s) => states.push(s));
    const socketEvents: SessionEventBody[] = [];
    socket.subscribe(session.id, (e) => socketEvents.push(e));
    const stream = collect(session.events({ signal: AbortSignal.timeout(20_000) }), () => false);
    const streamEnd = stream.done.then(
      () => null,
      (err: unknown) => err,
    );
    await until(() => socketEvents.length > 0 && stream.items.length > 0);

    await canopy.keys.revoke(created.id);

    await until(() => socket.status === 'closed');
    expect(socket.error).toMatchObject({ code: 'unauthorized' });
    expect(await streamEnd).toMatchObject({ code: 'unauthorized' });
    // Closed for good: a reconnection would have gone through "connecting" (it is scheduled at the close).
    expect(states).toEqual(['open', 'closed']);
    const refused = await socket.command('prompt', session.id, { content: 'x' }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'network_error' });
  });
});

function textOf(view: { turns: Array<{ content: Array<{ type: string; text?: string }> }> }): string {
  const turn = view.turns[view.turns.length - 1];
  return (turn?.content ?? [])
    .filter((b) => b.type === 'text')
    .map((b) => b.text ?? '')
    .join('');
}

/** Waits until the check holds (ten seconds at most). */
function until(check: () => boolean | Promise<boolean>): Promise<void> {
  return eventually(async () => expect(await check()).toBe(true), { timeoutMs: 10_000, intervalMs: 20 });
}

function eventuallyIdle(session: { get(): Promise<{ status: string }> }): Promise<void> {
  return until(async () => (await session.get()).status === 'idle');
}

/** The run once it has finished. */
function eventuallyRun(client: Canopy, runId: string) {
  return eventually(
    async () => {
      const run = await client.runs.get(runId);
      expect(run.finishedAt).not.toBeNull();
      return run;
    },
    { timeoutMs: 10_000 },
  );
}
