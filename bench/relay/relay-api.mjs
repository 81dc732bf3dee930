// The cluster bench's baseline relay, api side: the least any system like Canopy must do to deliver a worker's
// deltas to WebSocket subscribers on another process. It speaks just enough of Canopy's API for the bench's
// client (create a tenant and sessions, prompt, subscribe over /v1/ws) and relays, per session, what the relay
// workers PUBLISH: one Redis SUBSCRIBE per subscribed session, each message written as it is (already a frame)
// to that session's sockets. No database, no auth, no replay, no parsing of the relayed frames.
// Environment: PORT, REDIS_URL, RELAY_PREFIX, RELAY_WORKERS.

import { Buffer } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { URL } from 'node:url';

import { Redis } from 'ioredis';
import { WebSocketServer } from 'ws';

const port = Number(process.env.PORT);
const prefix = process.env.RELAY_PREFIX;
const workers = Number(process.env.RELAY_WORKERS);
const publisher = new Redis(process.env.REDIS_URL);
const subscriber = new Redis(process.env.REDIS_URL);
/** Sockets subscribed to each session. */
const sockets = new Map();

subscriber.on('messageBuffer', (channel, message) => {
  const sessionId = channel.toString().slice(prefix.length + 4);
  for (const ws of sockets.get(sessionId) ?? []) ws.send(message, { binary: false });
});

function json(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** The relay worker that streams a session: a stable hash of its id. */
function workerOf(sessionId) {
  let h = 0;
  for (const c of sessionId) h = (h * 31 + c.charCodeAt(0)) | 0;
  return Math.abs(h) % workers;
}

const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const url = new URL(req.url, 'http://relay');
    if (req.method === 'GET' && url.pathname === '/readyz') return json(res, 200, { status: 'ok' });
    if (req.method === 'POST' && url.pathname === '/v1/admin/tenants')
      return json(res, 201, { apiKey: 'relay' });
    if (req.method === 'POST' && url.pathname === '/v1/sessions') return json(res, 201, { id: randomUUID() });
    const prompt = /^\/v1\/sessions\/([^/]+)\/prompt$/.exec(url.pathname);
    if (req.method === 'POST' && prompt) {
      const sessionId = prompt[1];
      publisher.publish(`${prefix}:start:${workerOf(sessionId)}`, sessionId).then(
        () => json(res, 202, { runId: sessionId }),
        (err) => json(res, 503, { error: { code: 'unavailable', message: String(err) } }),
      );
      return;
    }
    json(res, 404, { error: { code: 'not_found', message: req.url } });
  });
});

const wss = new WebSocketServer({ server, path: '/v1/ws', perMessageDeflate: false });
wss.on('connection', (ws) => {
  const mine = new Set();
  ws.on('message', (raw) => {
    const frame = JSON.parse(raw.toString());
    if (frame.op !== 'subscribe') return;
    const { sessionId, ref } = frame;
    let set = sockets.get(sessionId);
    const first = !set;
    if (!set) sockets.set(sessionId, (set = new Set()));
    set.add(ws);
    mine.add(sessionId);
    const subscribed = first ? subscriber.subscribe(`${prefix}:ev:${sessionId}`) : Promise.resolve();
    subscribed.then(() => {
      ws.send(JSON.stringify({ type: 'reply', ref, ok: true }));
      ws.send(
        JSON.stringify({ type: 'event', sessionId, seq: 0, event: 'snapshot', data: {}, at: Date.now() }),
      );
    });
  });
  ws.on('close', () => {
    for (const sessionId of mine) sockets.get(sessionId)?.delete(ws);
  });
});

server.listen(port, '127.0.0.1', () => process.stdout.write(`relay api listening on ${port}\n`));
process.on('SIGTERM', () => {
  wss.close();
  server.close();
  publisher.disconnect();
  subscriber.disconnect();
  process.exit(0);
});
