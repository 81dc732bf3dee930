// The HTTP bench's load generator, a process of its own (so its CPU is not the service's): closed-loop virtual
// users over keep-alive connections, shaped like the LangGraph agent server's benchmarks. Each user creates a
// session, then plays `turns` turns on it, then starts again with a new session, until the window ends.
// Modes: wait (prompt with wait: true), stream (an SSE subscription per session; a turn is the prompt's POST until
// the run's committed `store` event), branch (one prompt, then regenerations of its reply with wait: true),
// create (sessions only); with closeSessions, each session is closed after its turns. Reads its job as JSON from
// argv[2]; prints its figures as one JSON line on stdout.

import { Buffer } from 'node:buffer';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { URL } from 'node:url';

import { createParser } from 'eventsource-parser';

const job = JSON.parse(process.argv[2]);
const { url, key, mode, concurrency, warmupMs, measureMs, turns } = job;
/** Close each session after its turns (the bench's warm-up: it leaves no live session to expire in a level). */
const closeSessions = job.closeSessions === true;
const base = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency * 2 + 4 });

const start = performance.now() + warmupMs;
const end = start + measureMs;

/** Turn latencies (ms) of turns wholly inside the window, and session creates likewise. */
const latencies = [];
const createLatencies = [];
/** Units (turns, or sessions in create mode) completed, each counted by its share inside the window. */
let completed = 0;
/** Every unit and session, warm-up included (the database counters cover the whole load). */
let totalTurns = 0;
let totalSessions = 0;
const errors = {};

function share(started, ended) {
  return ended > started
    ? Math.max(0, Math.min(ended, end) - Math.max(started, start)) / (ended - started)
    : 0;
}

function request(method, path, body) {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        agent,
        headers: {
          authorization: `Bearer ${key}`,
          ...(payload !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) }
            : {}),
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json;
          try {
            json = text ? JSON.parse(text) : null;
          } catch {
            json = { raw: text };
          }
          if (res.statusCode >= 400) {
            const err = new Error(`${method} ${path}: ${res.statusCode} ${text.slice(0, 200)}`);
            err.code = json?.error?.code ?? String(res.statusCode);
            reject(err);
          } else resolve(json);
        });
      },
    );
    req.on('error', reject);
    if (payload !== undefined) req.write(payload);
    req.end();
  });
}

async function createSession() {
  const started = performance.now();
  const session = await request('POST', '/v1/sessions', { model: 'mock:echo' });
  const ended = performance.now();
  totalSessions++;
  if (started >= start && ended < end) createLatencies.push(ended - started);
  return { session, started, ended };
}

function countError(err) {
  const code = err?.code ?? 'error';
  errors[code] = (errors[code] ?? 0) + 1;
}

async function timed(fn) {
  const started = performance.now();
  await fn();
  const ended = performance.now();
  totalTurns++;
  completed += share(started, ended);
  if (started >= start && ended < end) latencies.push(ended - started);
}

/** An SSE subscription that resolves each run when its committed `store` event arrives. */
async function subscribe(sessionId) {
  const ended = new Map();
  let waiter = null;
  let finalTurn = null;
  const settle = (runId, value) => {
    if (waiter?.runId === runId) {
      const w = waiter;
      waiter = null;
      if (value instanceof Error) w.reject(value);
      else w.resolve();
    } else ended.set(runId, value);
  };
  const parser = createParser({
    onEvent(e) {
      if (e.event === 'turn') {
        const data = JSON.parse(e.data);
        if (data.stop === 'stop') finalTurn = data.runId;
      } else if (e.event === 'store' && finalTurn) {
        const runId = finalTurn;
        finalTurn = null;
        settle(runId, true);
      } else if (e.event === 'error' || e.event === 'cancelled') {
        const data = JSON.parse(e.data);
        if (data.runId) settle(data.runId, new Error(`run ${data.runId} ${e.event}`));
      }
    },
  });
  const res = await new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: 'GET',
        path: `/v1/sessions/${sessionId}/events`,
        headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
      },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
  res.setEncoding('utf8');
  res.on('data', (chunk) => parser.feed(chunk));
  res.on('error', () => undefined);
  return {
    waitFor(runId) {
      if (ended.has(runId)) {
        const value = ended.get(runId);
        ended.delete(runId);
        return value instanceof Error ? Promise.reject(value) : Promise.resolve();
      }
      return new Promise((resolve, reject) => (waiter = { runId, resolve, reject }));
    },
    close() {
      res.destroy();
    },
  };
}

async function user(index) {
  while (performance.now() < end) {
    try {
      if (mode === 'create') {
        const { started, ended } = await createSession();
        totalTurns++;
        completed += share(started, ended);
        continue;
      }
      const { session } = await createSession();
      const id = session.id;
      if (mode === 'wait') {
        for (let t = 0; t < turns && performance.now() < end; t++) {
          await timed(() =>
            request('POST', `/v1/sessions/${id}/prompt`, { content: `u${index} t${t}`, wait: true }),
          );
        }
      } else if (mode === 'branch') {
        await request('POST', `/v1/sessions/${id}/prompt`, { content: `u${index}`, wait: true });
        for (let t = 0; t < turns && performance.now() < end; t++) {
          await timed(() => request('POST', `/v1/sessions/${id}/branch`, { nodeId: 1, wait: true }));
        }
      } else if (mode === 'stream') {
        const sub = await subscribe(id);
        try {
          for (let t = 0; t < turns && performance.now() < end; t++) {
            await timed(async () => {
              const { runId } = await request('POST', `/v1/sessions/${id}/prompt`, {
                content: `u${index} t${t}`,
              });
              await sub.waitFor(runId);
            });
          }
        } finally {
          sub.close();
        }
      } else {
        throw new Error(`unknown mode ${mode}`);
      }
      if (closeSessions) await request('POST', `/v1/sessions/${id}/close`);
    } catch (err) {
      countError(err);
      if (Object.values(errors).reduce((a, b) => a + b, 0) > 50) throw err;
    }
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

const cpuFrom = process.cpuUsage();
const startedAt = performance.now();
await Promise.all(Array.from({ length: concurrency }, (_, i) => user(i)));
const cpu = process.cpuUsage(cpuFrom);
latencies.sort((a, b) => a - b);
createLatencies.sort((a, b) => a - b);
agent.destroy();
process.stdout.write(
  `${JSON.stringify({
    perSec: completed / (measureMs / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    samples: latencies.length,
    createP50Ms: percentile(createLatencies, 50),
    createP99Ms: percentile(createLatencies, 99),
    totalTurns,
    totalSessions,
    errors,
    cpuPct: ((cpu.user + cpu.system) / 1000 / (performance.now() - startedAt)) * 100,
  })}\n`,
);
