// The cluster bench's raw limit: the machine's Redis PUBLISH rate to a channel one other connection subscribes to.

import { Redis } from 'ioredis';

export const RAW_MS = 3_000;

/**
 * PUBLISH in pipelines of 500 (up to 4 in flight) to a channel one other connection subscribes to, for RAW_MS;
 * the rate is the messages that subscriber received per second. The payload has the shape and size of what a
 * worker publishes for one delta event: `<seq>\n[{"type":"text_delta","data":{...},"at":...}]`.
 */
export async function rawPublishRate(
  url: string,
  channel: string,
): Promise<{ perSec: number; payloadBytes: number }> {
  const event = {
    type: 'text_delta',
    data: { runId: '6f1c2a9e-3b7d-4c55-9a0e-2d8f4b7c1e90', index: 0, delta: ' word123' },
    at: Date.now(),
  };
  const payload = `${Date.now() * 1000}\n[${JSON.stringify(event)}]`;
  const publisher = new Redis(url);
  const subscriber = new Redis(url);
  let received = 0;
  subscriber.on('messageBuffer', () => received++);
  try {
    await subscriber.subscribe(channel);
    const inFlight: Promise<unknown>[] = [];
    const started = performance.now();
    const end = started + RAW_MS;
    let counted = 0;
    let countedAt = started;
    const from = received;
    while (performance.now() < end) {
      const pipeline = publisher.pipeline();
      for (let i = 0; i < 500; i++) pipeline.publish(channel, payload);
      inFlight.push(pipeline.exec());
      if (inFlight.length >= 4) await inFlight.shift();
      counted = received - from;
      countedAt = performance.now();
    }
    await Promise.all(inFlight);
    return { perSec: counted / ((countedAt - started) / 1000), payloadBytes: Buffer.byteLength(payload) };
  } finally {
    publisher.disconnect();
    subscriber.disconnect();
  }
}
