// Open connections die with their credential, on both runtimes: a WebSocket and an SSE stream opened with a key
// are closed (WebSocket 4401 unauthorized after an error frame; SSE a last `end` {reason: "unauthorized",
// reconnect: false}) when the key is revoked, and a prompt frame sent right after the revocation was answered acts
// on nothing; the same with 4403 / tenant_disabled when the tenant is disabled; an expiring key and a user token are
// cut at their expiry; revoking the key that minted a user token cuts the token's connections. In the distributed
// shape the connections are on one api process and the revocations go through the other, and HTTP on the first
// answers the new state at once (not after its credential cache's lifetime).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster, eventually } from '@canopy/testing';
import { Api, SseReader, newTenant } from './support/api-client';
import { TEST_ADMIN_KEY, startTestApp } from './support/test-app';
import { WsClient, wsUrl, type WsClose } from './support/ws-client';

/** A generous bound on "within a second": the test waits for the close event, this only caps the wait. */
const CUT_DEADLINE_MS = 5_000;

interface Deployment {
  /** Where revocations are sent. */
  control: string;
  /** Where the sockets and streams are open (another process than `control` when distributed). */
  edge: string;
  stop(): Promise<void>;
}

const runtimes: Array<[string, () => Promise<Deployment>]> = [
  [
    'the embedded runtime',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'canopy-revocation-'));
      const app = await startTestApp({ embeddedDataDir: dir });
      return {
        control: app.url,
        edge: app.url,
        stop: async () => {
          await app.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  ],
  [
    'a cluster (connections on api 2, revocations through api 1)',
    async () => {
      const cluster = await new Cluster({ apis: 2, workers: 1 }).start();
      return { control: cluster.api(1), edge: cluster.api(2), stop: () => cluster.stop() };
    },
  ],
];

describe.each(runtimes)('on %s', (_, start) => {
  let d: Deployment;
  let admin: Api;
  const open: Array<{ ws: WsClient; sse: SseReader }> = [];

  beforeAll(async () => {
    d = await start();
    admin = new Api(d.control, TEST_ADMIN_KEY);
  }, 120_000);

  afterAll(async () => {
    for (const { ws, sse } of open) {
      sse.close();
      ws.terminate();
    }
    await d?.stop();
  }, 60_000);

  /** A tenant, a second key of it (the one the connections use) and a session. */
  async function tenantWithSecondKey(name: string) {
    const tenant = await newTenant({ url: d.control } as never, name);
    const created = await tenant.api.post('/v1/keys', { name: 'connections' });
    expect(created.status).toBe(201);
    const session = await tenant.api.post('/v1/sessions', { model: 'mock:echo' });
    expect(session.status).toBe(201);
    return {
      ...tenant,
      second: { id: created.body.id as string, key: created.body.apiKey as string },
      sessionId: session.body.id as string,
    };
  }

  /** A WebSocket subscribed to the session and an SSE stream of it, both on the edge, both past their start. */
  async function connect(credential: string, sessionId: string) {
    const ws = await WsClient.connect(wsUrl(d.edge, credential));
    const sse = await SseReader.open(`${d.edge}/v1/sessions/${sessionId}/events?mode=observer`, {
      authorization: `Bearer ${credential}`,
    });
    open.push({ ws, sse });
    expect(sse.status).toBe(200);
    expect((await ws.request('subscribe', { sessionId, mode: 'observer' })).ok).toBe(true);
    await sse.waitFor((e) => e.event === 'snapshot');
    return { ws, sse };
  }

  /** Both were cut for `reason`: the WebSocket with an error frame then its close code, the SSE with `end`. */
  async function expectCut(
    { ws, sse }: { ws: WsClient; sse: SseReader },
    reason: 'unauthorized' | 'tenant_disabled',
    deadlineMs = CUT_DEADLINE_MS,
  ) {
    const closed = await eventually(
      () => {
        if (!ws.closeInfo) throw new Error('the WebSocket is still open');
        return ws.closeInfo;
      },
      { timeoutMs: deadlineMs },
    );
    expect(closed).toEqual<WsClose>({ code: reason === 'unauthorized' ? 4401 : 4403, reason });
    expect(ws.frames.find((f) => f.type === 'error')).toMatchObject({ error: { code: reason } });
    const end = await sse.waitFor((e) => e.event === 'end', deadlineMs);
    expect(end.data).toEqual({ reason, reconnect: false });
    await eventually(() => expect(sse.ended).toBe(true), { timeoutMs: deadlineMs });
  }

  /** Sends a prompt frame at once (the revocation was just answered); it must act on nothing. */
  function promptRightAway(ws: WsClient, sessionId: string): void {
    ws.send({ op: 'prompt', ref: 'after-revocation', sessionId, content: 'must not run', wait: true });
  }

  /** The frame sent after the revocation got no successful reply and the session has no run of it. */
  async function expectNoRunOf(ws: WsClient, api: Api, sessionId: string) {
    expect(ws.frames.find((f) => f.type === 'reply' && f.ref === 'after-revocation' && f.ok)).toBeUndefined();
    // A prompt of a valid key goes through on its own: the session was idle, and only its two nodes are there.
    const prompt = await api.post(`/v1/sessions/${sessionId}/prompt`, { content: 'still here', wait: true });
    expect(prompt.status).toBe(200);
    const tree = await api.get<{ nodes: Array<{ message: { role: string } }> }>(
      `/v1/sessions/${sessionId}/tree`,
    );
    expect(tree.body.nodes.map((n) => n.message.role)).toEqual(['user', 'assistant']);
  }

  it('revoking a key closes its WebSocket and SSE stream, and a frame sent after the revocation acts on nothing', async () => {
    const t = await tenantWithSecondKey('revoked key');
    const conn = await connect(t.second.key, t.sessionId);

    const revoked = await t.api.delete(`/v1/keys/${t.second.id}`);
    expect(revoked.status).toBe(204);
    promptRightAway(conn.ws, t.sessionId);
    // Every api answers 401 at once, not after its credential cache's lifetime.
    expect((await new Api(d.edge, t.second.key).get('/v1/sessions')).status).toBe(401);

    await expectCut(conn, 'unauthorized');
    await expectNoRunOf(conn.ws, t.api, t.sessionId);
  });

  it('an admin revoking a key closes its connections too', async () => {
    const t = await tenantWithSecondKey('key revoked by the admin');
    const conn = await connect(t.second.key, t.sessionId);

    expect((await admin.delete(`/v1/admin/keys/${t.second.id}`)).status).toBe(204);
    promptRightAway(conn.ws, t.sessionId);

    await expectCut(conn, 'unauthorized');
    await expectNoRunOf(conn.ws, t.api, t.sessionId);
  });

  it('disabling a tenant closes every connection of it with tenant_disabled; enabling it works at once everywhere', async () => {
    const t = await tenantWithSecondKey('disabled tenant');
    const token = (await t.api.post('/v1/tokens', { userId: 'alice' })).body.token as string;
    const own = await new Api(d.control, token).post('/v1/sessions', { model: 'mock:echo' });
    const conn = await connect(t.second.key, t.sessionId);
    const userConn = await connect(token, own.body.id);

    const disabled = await admin.patch(`/v1/admin/tenants/${t.tenantId}`, { disabled: true });
    expect(disabled.body.disabled).toBe(true);
    promptRightAway(conn.ws, t.sessionId);
    expect((await new Api(d.edge, t.key).get('/v1/sessions')).status).toBe(403);

    await expectCut(conn, 'tenant_disabled');
    await expectCut(userConn, 'tenant_disabled');

    expect((await admin.patch(`/v1/admin/tenants/${t.tenantId}`, { disabled: false })).status).toBe(200);
    // Enabled again: every api takes the tenant's keys at once.
    const edgeApi = new Api(d.edge, t.key);
    expect((await edgeApi.get('/v1/sessions')).status).toBe(200);
    await expectNoRunOf(conn.ws, edgeApi, t.sessionId);
  });

  it('revoking the key that minted a user token closes the token’s connections', async () => {
    const t = await tenantWithSecondKey('minting key revoked');
    const minted = await new Api(d.control, t.second.key).post('/v1/tokens', { userId: 'bob' });
    expect(minted.status).toBe(201);
    const token = minted.body.token as string;
    const own = await new Api(d.control, token).post('/v1/sessions', { model: 'mock:echo' });
    const conn = await connect(token, own.body.id);

    expect((await t.api.delete(`/v1/keys/${t.second.id}`)).status).toBe(204);
    promptRightAway(conn.ws, own.body.id);

    await expectCut(conn, 'unauthorized');
    await expectNoRunOf(conn.ws, t.api, own.body.id);
  });

  it('an expiring key and a user token are cut when they expire', async () => {
    const t = await tenantWithSecondKey('expiring credentials');
    const expiring = await t.api.post('/v1/keys', { expiresAt: new Date(Date.now() + 3_000).toISOString() });
    expect(expiring.status).toBe(201);
    const minted = await t.api.post('/v1/tokens', { userId: 'carol', ttlSeconds: 10 });
    expect(minted.status).toBe(201);
    const token = minted.body.token as string;
    const own = await new Api(d.control, token).post('/v1/sessions', { model: 'mock:echo' });

    const keyConn = await connect(expiring.body.apiKey, t.sessionId);
    const tokenConn = await connect(token, own.body.id);

    // Each is closed once its credential expires (the deadlines leave room past the expiry for a busy machine).
    await expectCut(keyConn, 'unauthorized', 3_000 + CUT_DEADLINE_MS);
    await expectCut(tokenConn, 'unauthorized', 10_000 + CUT_DEADLINE_MS);
    expect(Date.now()).toBeGreaterThanOrEqual(Date.parse(minted.body.expiresAt));
  }, 60_000);
});
