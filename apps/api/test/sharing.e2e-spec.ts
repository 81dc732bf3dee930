// Share links and feedback, end to end over HTTP: a link shows the path it was made for and nothing else (not later
// messages, not other branches, nothing of who or where), to anyone with its token and no credential; revoked, it
// answers 404 at once on every api of the deployment (a second api over the same database here); another tenant's
// credentials reach nothing of it; a user of the same tenant continues it as a session of their own. Ratings: one
// per rater and reply, changeable, listed and exported with the turn they rate, inside their tenant only. Both
// announce themselves by webhook.

/* eslint-disable @typescript-eslint/no-unsafe-call -- JSON bodies read loosely */

import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import { WebhookReceiver } from './support/webhook-receiver';

let t: TestApp;
let second: TestApp;
let receiver: WebhookReceiver;
let a: { tenantId: string; api: Api; key: string };
let b: { tenantId: string; api: Api; key: string };
let alice: Api;
let bob: Api;
let anonymous: Api;
let sessionId: string;

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true', RATE_LIMIT_SHARED_PER_ADDRESS: '1000' } });
  // A second api of the same deployment (same database), with a small budget for shared reads.
  second = await startTestApp({
    env: {
      DATABASE_URL: t.config.database.url!,
      RATE_LIMIT_SHARED_PER_ADDRESS: '4',
      // It delivers webhooks too (to the local receiver).
      WEBHOOK_ALLOW_PRIVATE: 'true',
    },
  });
  receiver = await WebhookReceiver.start();
  a = await newTenant(t, 'sharing A');
  b = await newTenant(t, 'sharing B');
  alice = a.api.as((await a.api.post('/v1/tokens', { userId: 'alice' })).body.token);
  bob = a.api.as((await a.api.post('/v1/tokens', { userId: 'bob' })).body.token);
  anonymous = new Api(t.url);
  const hook = await a.api.post('/v1/webhooks', {
    url: receiver.url,
    events: ['session.shared', 'feedback.created'],
  });
  expect(hook.status).toBe(201);
  receiver.secret = hook.body.secret;
  const created = await alice.post('/v1/sessions', {
    model: 'mock:echo',
    title: 'alice private title',
    metadata: { secret: 'metadata-of-alice' },
  });
  expect(created.status).toBe(201);
  sessionId = created.body.id;
  for (const content of ['first words', 'second words']) {
    expect((await alice.post(`/v1/sessions/${sessionId}/prompt`, { content, wait: true })).status).toBe(200);
  }
}, 60_000);

afterAll(async () => {
  await second?.close();
  await t?.close();
  await receiver?.close();
});

const turnTexts = (body: { turns: Array<{ userText: Array<{ text: string }> }> }) =>
  body.turns.map((turn) => turn.userText.map((b) => b.text).join(''));

describe('share links', () => {
  let share: { id: string; token: string; url: string; nodeId: number; expiresAt: string | null };

  it('share the head: 201 with a token shown once, and the link shows the turns and title to anyone', async () => {
    const res = await alice.post(`/v1/sessions/${sessionId}/shares`, { title: 'Look at this' });
    expect(res.status).toBe(201);
    share = res.body;
    expect(share).toMatchObject({ id: expect.any(String), nodeId: 4, expiresAt: null });
    expect(share.token).toMatch(/^shr_[A-Za-z0-9_-]{43}$/);
    expect(share.url).toBe(`${t.url}/#/shared/${share.token}`);

    const read = await anonymous.get(`/v1/shared/${share.token}`);
    expect(read.status).toBe(200);
    expect(read.body.title).toBe('Look at this');
    expect(turnTexts(read.body)).toEqual(['first words', 'second words']);
    expect(read.body.turns[1].content[0].text).toContain('second words');
    // Nothing of who or where: no ids, no metadata, no usage unless asked for.
    const text = JSON.stringify(read.body);
    for (const hidden of [a.tenantId, sessionId, 'alice', 'metadata-of-alice', share.id])
      expect(text).not.toContain(hidden);
    expect(read.body.turns[0].usage).toBeUndefined();
    expect(Object.keys(read.body).sort()).toEqual(['sharedAt', 'title', 'turns']);
    // Never the token again.
    const listed = await alice.get('/v1/shares');
    expect(JSON.stringify(listed.body)).not.toContain(share.token);
  });

  it('is frozen: a later message and a regenerated reply never appear', async () => {
    expect(
      (await alice.post(`/v1/sessions/${sessionId}/prompt`, { content: 'third words', wait: true })).status,
    ).toBe(200);
    // A new version of the shared path's last reply: a branch off the path.
    expect((await alice.post(`/v1/sessions/${sessionId}/branch`, { nodeId: 3, wait: true })).status).toBe(
      200,
    );
    const read = await anonymous.get(`/v1/shared/${share.token}`);
    expect(turnTexts(read.body)).toEqual(['first words', 'second words']);
    expect(read.body.turns[1].resId).toBe(4);
    expect(JSON.stringify(read.body)).not.toContain('third words');
  });

  it('shares an earlier node with usage when asked, and refuses what cannot be shared', async () => {
    const res = await a.api.post(`/v1/sessions/${sessionId}/shares`, { nodeId: 2, includeUsage: true });
    expect(res.status).toBe(201);
    const read = await anonymous.get(`/v1/shared/${res.body.token}`);
    expect(turnTexts(read.body)).toEqual(['first words']);
    expect(read.body.title).toBe('alice private title');
    expect(read.body.turns[0].usage).toMatchObject({ totalTokens: expect.any(Number) });

    expect((await alice.post(`/v1/sessions/${sessionId}/shares`, { nodeId: 999 })).body.error.code).toBe(
      'not_found',
    );
    const past = await alice.post(`/v1/sessions/${sessionId}/shares`, { expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.status).toBe(400);
    const empty = (await alice.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    expect((await alice.post(`/v1/sessions/${empty}/shares`, {})).status).toBe(400);
  });

  it('reveals nothing to another tenant or another user of the tenant', async () => {
    expect((await b.api.post(`/v1/sessions/${sessionId}/shares`, {})).status).toBe(404);
    expect((await bob.post(`/v1/sessions/${sessionId}/shares`, {})).status).toBe(404);
    expect((await b.api.get('/v1/shares')).body.data).toEqual([]);
    expect((await bob.get('/v1/shares')).body.data).toEqual([]);
    expect((await a.api.get('/v1/shares')).body.data.map((s: { id: string }) => s.id)).toContain(share.id);
    expect((await alice.get(`/v1/shares?sessionId=${sessionId}`)).body.data).toHaveLength(2);
    for (const api of [b.api, bob]) {
      const res = await api.delete(`/v1/shares/${share.id}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    // Another tenant cannot continue it (nor tell it from a token that is no link).
    expect((await b.api.post(`/v1/shared/${share.token}/fork`, {})).status).toBe(404);
    expect((await anonymous.get(`/v1/shared/shr_${'x'.repeat(43)}`)).status).toBe(404);
    expect((await anonymous.get('/v1/shared/not-a-token')).status).toBe(404);
  });

  it('continues into the viewer’s own session when signed in to the same tenant', async () => {
    const forked = await bob.post(`/v1/shared/${share.token}/fork`, {});
    expect(forked.status).toBe(201);
    expect(forked.body).toMatchObject({ userId: 'bob', title: 'Look at this' });
    expect(forked.body.metadata).toMatchObject({ sharedFrom: share.id });
    expect(forked.body.metadata.secret).toBeUndefined();
    const turns = await bob.get(`/v1/sessions/${forked.body.id}/turns`);
    expect(
      turns.body.data.map((turn: { userText: Array<{ text: string }> }) => turn.userText[0]!.text),
    ).toEqual(['first words', 'second words']);
    expect(
      (await bob.post(`/v1/sessions/${forked.body.id}/prompt`, { content: 'my own words', wait: true }))
        .status,
    ).toBe(200);
    // Alice's session is untouched, and bob still cannot open it.
    expect((await bob.get(`/v1/sessions/${sessionId}`)).status).toBe(404);
    expect(JSON.stringify((await alice.get(`/v1/sessions/${sessionId}/turns`)).body)).not.toContain(
      'my own words',
    );
  });

  it('announces session.shared by webhook', async () => {
    await eventually(() =>
      expect(receiver.attempts.filter((x) => x.type === 'session.shared').map((x) => x.data)).toContainEqual(
        expect.objectContaining({
          shareId: share.id,
          sessionId,
          nodeId: 4,
          userId: 'alice',
          tenantId: a.tenantId,
        }),
      ),
    );
  });

  it('expires', async () => {
    const res = await alice.post(`/v1/sessions/${sessionId}/shares`, {
      expiresAt: new Date(Date.now() + 1_500).toISOString(),
    });
    expect((await anonymous.get(`/v1/shared/${res.body.token}`)).status).toBe(200);
    await eventually(async () =>
      expect((await anonymous.get(`/v1/shared/${res.body.token}`)).status).toBe(404),
    );
  });

  it('revoked, answers 404 at once on every api of the deployment', async () => {
    const other = new Api(second.url);
    const res = await alice.post(`/v1/sessions/${sessionId}/shares`, {});
    expect((await other.get(`/v1/shared/${res.body.token}`)).status).toBe(200);
    expect((await anonymous.get(`/v1/shared/${res.body.token}`)).status).toBe(200);
    expect((await alice.delete(`/v1/shares/${res.body.id}`)).status).toBe(204);
    expect((await anonymous.get(`/v1/shared/${res.body.token}`)).status).toBe(404);
    expect((await other.get(`/v1/shared/${res.body.token}`)).status).toBe(404);
    expect((await bob.post(`/v1/shared/${res.body.token}/fork`, {})).status).toBe(404);
    expect((await alice.delete(`/v1/shares/${res.body.id}`)).status).toBe(404);
  });

  it('goes with its session', async () => {
    const doomed = (await alice.post('/v1/sessions', { model: 'mock:echo' })).body.id;
    await alice.post(`/v1/sessions/${doomed}/prompt`, { content: 'short lived', wait: true });
    const res = await alice.post(`/v1/sessions/${doomed}/shares`, {});
    expect((await anonymous.get(`/v1/shared/${res.body.token}`)).status).toBe(200);
    expect((await alice.delete(`/v1/sessions/${doomed}`)).status).toBe(204);
    expect((await anonymous.get(`/v1/shared/${res.body.token}`)).status).toBe(404);
    expect((await alice.get('/v1/shares')).body.data.map((s: { id: string }) => s.id)).not.toContain(
      res.body.id,
    );
  });

  it('is rate-limited per address', async () => {
    // The second api's budget is 4 a minute (the revocation test read twice through it already).
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await fetch(`${second.url}/v1/shared/${share.token}`)).status);
    expect(statuses.slice(0, 2)).toEqual([200, 200]);
    expect(statuses.at(-1)).toBe(429);
    const refused = await fetch(`${second.url}/v1/shared/${share.token}`);
    expect(await refused.json()).toMatchObject({ error: { code: 'rate_limited' } });
  });
});

describe('feedback', () => {
  const path = () => `/v1/sessions/${sessionId}/nodes/2/feedback`;

  it('one rating per user and reply, changeable, with the turn it rates', async () => {
    const first = await alice.request('PUT', path(), { rating: 'up', comment: 'nice', tags: ['helpful'] });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({
      sessionId,
      nodeId: 2,
      userId: 'alice',
      rating: 'up',
      comment: 'nice',
      tags: ['helpful'],
      model: 'mock:echo',
      promptNodeId: 1,
      prompt: 'first words',
      usage: { totalTokens: expect.any(Number) },
    });
    expect(first.body.reply).toContain('first words');
    const changed = await alice.request('PUT', path(), { rating: 'down' });
    expect(changed.body).toMatchObject({ id: first.body.id, rating: 'down', comment: null, tags: [] });
    // The tenant key rates for another user, and for itself: each a rating of its own.
    expect((await a.api.request('PUT', path(), { rating: 'up', userId: 'carol' })).body.userId).toBe('carol');
    expect((await a.api.request('PUT', path(), { rating: 'up' })).body.userId).toBeNull();
    const all = await a.api.get(`/v1/feedback?sessionId=${sessionId}`);
    expect(all.body.data).toHaveLength(3);
    expect((await a.api.get('/v1/feedback?userId=alice')).body.data).toHaveLength(1);
    expect(
      (await a.api.get('/v1/feedback?rating=down')).body.data.map((f: { userId: string }) => f.userId),
    ).toEqual(['alice']);
    expect((await a.api.get('/v1/feedback?model=other')).body.data).toEqual([]);
    // A user token reads its own.
    expect((await alice.get('/v1/feedback')).body.data.map((f: { userId: string }) => f.userId)).toEqual([
      'alice',
    ]);
    expect((await alice.get('/v1/feedback?userId=carol')).status).toBe(400);
  });

  it('rates replies only, and refuses bad input', async () => {
    const user = await alice.request('PUT', `/v1/sessions/${sessionId}/nodes/1/feedback`, { rating: 'up' });
    expect(user.status).toBe(422);
    expect(user.body.error.code).toBe('not_assistant_node');
    expect((await alice.request('PUT', path(), { rating: 'meh' })).status).toBe(400);
    expect((await alice.request('PUT', path(), { rating: 'up', userId: 'carol' })).status).toBe(400);
    expect(
      (await alice.request('PUT', `/v1/sessions/${sessionId}/nodes/x/feedback`, { rating: 'up' })).status,
    ).toBe(400);
    expect(
      (await alice.request('PUT', `/v1/sessions/${sessionId}/nodes/99/feedback`, { rating: 'up' })).status,
    ).toBe(404);
  });

  it('stays inside its tenant and with its user', async () => {
    expect((await b.api.request('PUT', path(), { rating: 'up' })).status).toBe(404);
    expect((await bob.request('PUT', path(), { rating: 'up' })).status).toBe(404);
    expect((await b.api.get('/v1/feedback')).body.data).toEqual([]);
    expect((await bob.get('/v1/feedback')).body.data).toEqual([]);
    expect((await b.api.delete(path())).status).toBe(404);
    const exported = await fetch(`${t.url}/v1/feedback/export`, {
      headers: { authorization: `Bearer ${b.key}` },
    });
    expect(await exported.text()).toBe('');
  });

  it('exports NDJSON for evaluation sets', async () => {
    const res = await fetch(`${t.url}/v1/feedback/export?sessionId=${sessionId}`, {
      headers: { authorization: `Bearer ${a.key}` },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/application\/x-ndjson/);
    const lines = (await res.text())
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { userId: string | null; prompt: string; reply: string });
    expect(lines.map((l) => l.userId).sort()).toEqual(['alice', 'carol', null].sort());
    for (const line of lines)
      expect(line).toMatchObject({ prompt: 'first words', reply: expect.any(String) });
  });

  it('is removed by DELETE, and announced once per new rating', async () => {
    expect((await alice.delete(path())).status).toBe(204);
    expect((await alice.delete(path())).status).toBe(404);
    expect((await a.api.request('DELETE', `${path()}?userId=carol`)).status).toBe(204);
    expect((await a.api.get(`/v1/feedback?sessionId=${sessionId}`)).body.data).toHaveLength(1);
    await eventually(() => {
      const created = receiver.attempts.filter((x) => x.type === 'feedback.created');
      expect(created.map((x) => x.data.userId).sort()).toEqual(['alice', 'carol', null].sort());
      expect(created.every((x) => x.verified)).toBe(true);
    });
  });

  it('goes with its session, and so do its links', async () => {
    expect((await a.api.get(`/v1/feedback?sessionId=${sessionId}`)).body.data).toHaveLength(1);
    expect((await alice.delete(`/v1/sessions/${sessionId}`)).status).toBe(204);
    expect((await a.api.get(`/v1/feedback?sessionId=${sessionId}`)).body.data).toEqual([]);
    expect((await a.api.get(`/v1/shares?sessionId=${sessionId}`)).body.data).toEqual([]);
  });
});
