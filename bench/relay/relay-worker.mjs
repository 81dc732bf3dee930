// The cluster bench's baseline relay, worker side: told to start a session (a PUBLISH on its start channel), it
// streams the bench's reply as Canopy's frames would carry it — `status`, one `text_delta` per word every
// RELAY_DELTA_MS ms (each stamped with `at` at publish), then `turn` and `store` — each frame one PUBLISH on the
// session's channel. Nothing else: no database, no coalescing, no replay log.
// Environment: REDIS_URL, RELAY_PREFIX, RELAY_INDEX, RELAY_DELTAS, RELAY_DELTA_MS.

import { clearInterval, setInterval } from 'node:timers';

import { Redis } from 'ioredis';

const prefix = process.env.RELAY_PREFIX;
const deltas = Number(process.env.RELAY_DELTAS);
const deltaMs = Number(process.env.RELAY_DELTA_MS);
const publisher = new Redis(process.env.REDIS_URL);
const subscriber = new Redis(process.env.REDIS_URL);

function stream(sessionId) {
  const channel = `${prefix}:ev:${sessionId}`;
  let seq = 0;
  const publish = (event, data) =>
    publisher.publish(
      channel,
      JSON.stringify({ type: 'event', sessionId, seq: ++seq, event, data, at: Date.now() }),
    );
  void publish('status', { status: 'busy', runId: sessionId });
  let i = 0;
  const timer = setInterval(() => {
    void publish('text_delta', { runId: sessionId, index: 0, delta: i === 0 ? 'word0' : ` word${i}` });
    if (++i < deltas) return;
    clearInterval(timer);
    void publish('turn', { runId: sessionId, stop: 'stop' });
    void publish('store', { ok: true, kind: 'tree' });
  }, deltaMs);
}

subscriber.on('message', (_channel, sessionId) => stream(sessionId));
await subscriber.subscribe(`${prefix}:start:${process.env.RELAY_INDEX}`);
process.stdout.write('relay worker ready\n');
process.on('SIGTERM', () => {
  publisher.disconnect();
  subscriber.disconnect();
  process.exit(0);
});
