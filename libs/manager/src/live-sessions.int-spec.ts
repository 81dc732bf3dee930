// The live sessions of a process (LiveSessions, SessionManager): controllers and observers in the registry, idle
// shutdown, the activity feed, close and delete, tenant and user isolation, opening a stored session with start
// options.

import type { ActivityEvent, Scope, SessionEvent } from '@canopy/core';
import { eventually } from '@canopy/testing';
import { EngineHarness, converse as conversed, type Engine } from '@canopy/testing/engine-harness';
import { IDLE_ARM_DELAY_MS } from './live-sessions';

const h = new EngineHarness({ idleShutdownMs: 150 });
let engine: Engine;
let scope: Scope;

beforeAll(async () => {
  engine = await h.setup();
  scope = await h.newTenant();
});
afterAll(() => h.teardown());

const converse = (id: string, content: string) => conversed(engine, scope, id, content);

describe('liveness', () => {
  it('counts controllers and observers in the registry; re-subscribing changes the mode', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    const a = await engine.service.subscribe(scope, s.id, () => undefined, { mode: 'controller' });
    const b = await engine.service.subscribe(scope, s.id, () => undefined, { mode: 'observer' });
    await eventually(async () =>
      expect(await engine.registry.get(scope.tenantId, s.id)).toMatchObject({
        controllers: 1,
        observers: 1,
        where: { api: ['test-0'] },
      }),
    );
    b.setMode('controller');
    await eventually(async () =>
      expect(await engine.registry.get(scope.tenantId, s.id)).toMatchObject({ controllers: 2, observers: 0 }),
    );
    a.unsubscribe();
    b.unsubscribe();
  });

  it('shuts a session down after idleShutdownAfterMs with no controller and no run; its data stays', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo', idleShutdownAfterMs: 100 });
    const ended: string[] = [];
    const sub = await engine.service.subscribe(scope, s.id, () => undefined, { mode: 'controller' });
    const observer = await engine.service.subscribe(scope, s.id, () => undefined, {
      mode: 'observer',
      onEnd: (reason) => ended.push(reason),
    });
    await converse(s.id, 'kept');
    await new Promise((r) => setTimeout(r, 200));
    expect(engine.live.get(scope.tenantId, s.id)).toBeDefined(); // a controller holds it open
    sub.unsubscribe(); // the transition that starts the idle timer
    await eventually(() => expect(engine.live.get(scope.tenantId, s.id)).toBeUndefined(), {
      timeoutMs: 2_000,
    });
    expect(ended).toEqual(['idle']);
    expect(await engine.registry.get(scope.tenantId, s.id)).toBeNull();
    observer.unsubscribe();
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(2); // reopened on use, data intact
  });

  it('sets no idle timer for a session opened for a subscriber that attaches at once; sets it when it leaves, then at once', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo', idleShutdownAfterMs: 1_000 });
    const timers = engine.deps.timers;
    const set = timers.set.bind(timers);
    const delays: number[] = [];
    timers.set = (timer, delayMs) => {
      if (timer.kind === 'session-idle' && timer.sessionId === s.id) delays.push(delayMs);
      return set(timer, delayMs);
    };
    try {
      const sub = await engine.service.subscribe(scope, s.id, () => undefined, { mode: 'controller' });
      await new Promise((r) => setTimeout(r, IDLE_ARM_DELAY_MS + 200));
      expect(delays).toEqual([]); // idle for a moment at open: no durable timer for that
      const leftAt = Date.now();
      sub.unsubscribe();
      await eventually(() => expect(delays).toHaveLength(1));
      // Set after the arming delay, for the same moment: about 1 s after the subscriber left.
      expect(delays[0]!).toBeLessThanOrEqual(1_000 - IDLE_ARM_DELAY_MS + 50);
      expect(delays[0]! + (Date.now() - leftAt)).toBeGreaterThanOrEqual(950);

      // Once set, later idleness moves it at once (an earlier timer must not fire in a short idle gap).
      const again = await engine.service.subscribe(scope, s.id, () => undefined, { mode: 'controller' });
      again.unsubscribe();
      expect(delays).toEqual([delays[0], 1_000]);
    } finally {
      timers.set = set;
    }
  });

  it('never shuts down while a run is in flight, even without controllers', async () => {
    const s = await engine.manager.create(scope, {
      model: 'mock:echo',
      idleShutdownAfterMs: 50,
      opts: { delayMs: 60 },
    });
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'a b c d e' });
    await new Promise((r) => setTimeout(r, 200));
    expect(engine.live.get(scope.tenantId, s.id)?.status).toBe('busy');
    expect((await engine.service.waitForRun(scope, s.id, runId)).status).toBe('completed');
    await eventually(() => expect(engine.live.get(scope.tenantId, s.id)).toBeUndefined(), {
      timeoutMs: 2_000,
    });
  });
});

describe('activity feed and lifecycle', () => {
  it('announces opened, status, run_started, run_finished, title and closed for the tenant only', async () => {
    const other = await h.newTenant();
    const mine: ActivityEvent[] = [];
    const all: ActivityEvent[] = [];
    const theirs: ActivityEvent[] = [];
    const u1 = await engine.feed.subscribe(scope.tenantId, (e) => mine.push(e));
    const u2 = await engine.feed.subscribe(null, (e) => all.push(e));
    const u3 = await engine.feed.subscribe(other.tenantId, (e) => theirs.push(e));
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    await converse(s.id, 'name me');
    await eventually(() => expect(mine.map((e) => e.type)).toContain('title'));
    await engine.manager.close(scope, s.id);
    const types = mine.filter((e) => 'id' in e.data && e.data.id === s.id).map((e) => e.type);
    // The title comes with the run's last commit, before the run is announced finished.
    expect(types).toEqual(['opened', 'status', 'run_started', 'status', 'title', 'run_finished', 'closed']);
    expect(all.filter((e) => e.tenantId === scope.tenantId).length).toBeGreaterThanOrEqual(types.length);
    expect(theirs).toEqual([]);
    await Promise.all([u1(), u2(), u3()]);
  });

  it('close never loses a run in flight: session_busy while busy, and the run still completes', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo', opts: { delayMs: 30 } });
    const { runId } = await engine.service.prompt(scope, s.id, { content: 'keep me safe' });
    await expect(engine.manager.close(scope, s.id)).rejects.toMatchObject({ code: 'session_busy' });
    const result = await engine.service.waitForRun(scope, s.id, runId);
    expect(result.status).toBe('completed');
    await engine.manager.close(scope, s.id);
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(2);
  });

  it('close is idempotent and leaves the data; delete removes it and answers not_found after', async () => {
    const s = await engine.manager.create(scope, { model: 'mock:echo' });
    await converse(s.id, 'to delete');
    await engine.manager.close(scope, s.id);
    await engine.manager.close(scope, s.id);
    expect((await engine.service.tree(scope, s.id)).nodes).toHaveLength(2);
    const events: SessionEvent[] = [];
    const ended: string[] = [];
    await engine.service.subscribe(scope, s.id, (e) => events.push(e), { onEnd: (r) => ended.push(r) });
    await engine.manager.delete(scope, s.id);
    expect(ended).toEqual(['delete']);
    await expect(engine.service.get(scope, s.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(engine.manager.delete(scope, s.id)).rejects.toMatchObject({ code: 'not_found' });
  });

  it('hides sessions of other tenants and of other users: not_found everywhere', async () => {
    const other = await h.newTenant();
    const s = await engine.manager.create(scope, { model: 'mock:echo', userId: 'alice' });
    await expect(engine.service.get(other, s.id)).rejects.toMatchObject({ code: 'not_found' });
    await expect(engine.service.prompt(other, s.id, { content: 'x' })).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(engine.service.subscribe(other, s.id, () => undefined)).rejects.toMatchObject({
      code: 'not_found',
    });
    await expect(engine.service.subscribe(scope, 'no-such-session', () => undefined)).rejects.toMatchObject({
      code: 'not_found',
    });
    const bob = { ...scope, userId: 'bob' };
    await expect(engine.service.subscribe(bob, s.id, () => undefined)).rejects.toMatchObject({
      code: 'not_found',
    });
    // Nobody's probe made it live here (another user's id is checked before anything opens).
    expect(engine.live.get(scope.tenantId, s.id)).toBeUndefined();
    await expect(engine.service.cancel(bob, s.id)).rejects.toMatchObject({ code: 'not_found' });
    const alice = { ...scope, userId: 'alice' };
    expect((await engine.service.get(alice, s.id)).id).toBe(s.id);
  });
});

describe('opening a stored session with start options (load-mode resolution)', () => {
  it('keeps the persisted model and title, applies system and opts from the start options', async () => {
    const s = await engine.manager.create(scope, {
      model: 'mock:echo',
      title: 'Stored',
      system: 'old system',
    });
    const { live } = await engine.manager.open(scope, s.id, {
      model: 'mock:script',
      system: 'new system',
      opts: { delayMs: 1 },
      title: 'ignored',
    });
    expect(live.info).toMatchObject({
      model: 'mock:echo',
      title: 'Stored',
      system: 'new system',
      opts: { delayMs: 1 },
    });
    expect(await engine.service.get(scope, s.id)).toMatchObject({ model: 'mock:echo', system: 'new system' });
  });
});
