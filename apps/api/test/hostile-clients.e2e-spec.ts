// Hostile and broken clients against the real app: SSE and WebSocket clients that never read are cut off once
// what waits for them passes LIVE_CLIENT_BUFFER_MAX_BYTES (counted in /metrics; the process's memory stays
// bounded), and WebSocket frames count against the same request budgets as HTTP (a flood gets rate_limited
// replies, then the connection is closed).

import { connect, type Socket } from 'node:net';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import { WsClient, wsUrl } from './support/ws-client';

const BUFFER_MAX = 65_536;
const RATE_LIMIT = 60;

let t: TestApp;
let api: Api;
let key: string;
let sessionId: string;

beforeAll(async () => {
  t = await startTestApp({
    env: {
      LIVE_CLIENT_BUFFER_MAX_BYTES: String(BUFFER_MAX),
      RATE_LIMIT_PER_KEY: String(RATE_LIMIT),
      RATE_LIMIT_PER_TENANT: '0',
    },
  });
  ({ api, key } = await newTenant(t, 'hostile'));
  // A session whose tree is large (~6 MB): its snapshot alone overflows a socket that is not read.
  sessionId = (await api.post('/v1/sessions', { model: 'mock:echo' })).body.id;
  const block = { type: 'text', text: 'x'.repeat(190_000) };
  for (let i = 0; i < 8; i++) {
    const content = [{ type: 'text', text: `prompt ${i}` }, block, block, block, block];
    const res = await api.post(`/v1/sessions/${sessionId}/prompt`, { content, wait: true });
    expect(res.status).toBe(200);
  }
}, 120_000);

afterAll(async () => {
  await t?.close();
});

async function metric(name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

/** An SSE request on a raw socket that never reads a byte of the answer. */
function deafSseClient(path: string): Promise<Socket> {
  const url = new URL(t.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${key}\r\n\r\n`,
      );
      socket.pause();
      resolve(socket);
    });
    socket.on('error', reject);
  });
}

describe('slow consumers', () => {
  it('cuts off SSE clients that do not read, and frees what waited for them', async () => {
    const before = await metric('canopy_live_clients_cut_total', '{transport="sse"}');
    const deaf = await Promise.all(
      Array.from({ length: 5 }, () => deafSseClient(`/v1/sessions/${sessionId}/events`)),
    );
    // Once they are subscribed, any event after the snapshot finds the backlog over the limit.
    await eventually(
      async () => expect(await metric('canopy_subscribers', '{mode="controller"}')).toBeGreaterThanOrEqual(5),
      { timeoutMs: 15_000 },
    );
    await api.post(`/v1/sessions/${sessionId}/prompt`, { content: 'ping', wait: true });
    await eventually(
      async () =>
        expect(await metric('canopy_live_clients_cut_total', '{transport="sse"}')).toBeGreaterThanOrEqual(
          before + 5,
        ),
      { timeoutMs: 15_000 },
    );
    // The connections are gone on the server's side: the clients see them end once they read.
    await Promise.all(
      deaf.map(
        (s) =>
          new Promise<void>((resolve) => {
            s.on('close', () => resolve());
            s.resume();
          }),
      ),
    );
    // A client that reads gets the same stream as before.
    const ok = await fetch(`${t.url}/v1/sessions/${sessionId}/events?token=${key}`);
    expect(ok.status).toBe(200);
    await ok.body?.cancel();
  }, 60_000);

  it('cuts off WebSocket clients that do not read, with slow_consumer', async () => {
    const before = await metric('canopy_live_clients_cut_total', '{transport="websocket"}');
    const ws = await WsClient.connect(wsUrl(t.url, key));
    const reply = await ws.request('subscribe', { sessionId, mode: 'observer' });
    expect(reply.ok).toBe(true);
    ws.socket.pause(); // reads nothing more
    await api.post(`/v1/sessions/${sessionId}/prompt`, { content: 'x '.repeat(20_000), wait: true });
    await api.post(`/v1/sessions/${sessionId}/prompt`, { content: 'again', wait: true });
    await eventually(
      async () =>
        expect(await metric('canopy_live_clients_cut_total', '{transport="websocket"}')).toBeGreaterThan(
          before,
        ),
      { timeoutMs: 15_000 },
    );
    ws.socket.resume();
    const closed = await ws.closed;
    expect([1006, 1008]).toContain(closed.code);
  }, 60_000);
});

describe('WebSocket floods', () => {
  it('counts frames against the HTTP budget, answers rate_limited past it, then closes the connection', async () => {
    const { key: floodKey } = await newTenant(t, 'flood');
    const flooder = new Api(t.url, floodKey);
    const s = (await flooder.post('/v1/sessions', { model: 'mock:echo' })).body.id as string;
    const ws = await WsClient.connect(wsUrl(t.url, floodKey));
    for (let i = 0; i < RATE_LIMIT + 150; i++)
      ws.send({ op: 'navigate', ref: i, sessionId: s, nodeId: null });
    const closed = await ws.closed;
    expect(closed).toEqual({ code: 1008, reason: 'rate_limited' });
    const replies = ws.frames.filter((f) => f.type === 'reply');
    const accepted = replies.filter((f) => f.ok).length;
    const limited = replies.filter((f) => !f.ok && f.error?.code === 'rate_limited').length;
    expect(accepted).toBeLessThan(RATE_LIMIT); // the session creation counted too
    expect(limited).toBeGreaterThan(100);
    // The same budget: HTTP answers 429 for this credential now.
    expect((await flooder.get(`/v1/sessions/${s}`)).status).toBe(429);
    expect(await metric('canopy_ws_frames_rate_limited_total')).toBeGreaterThan(100);
  }, 60_000);
});
