// The distributed runtime's EventBus: per-session sequence counters, bounded replay logs and delivery in Redis,
// shared by every api and worker process, so any instance can serve any session.
//
// Keys (ids percent-encoded; the braces are a Redis Cluster hash tag, so a session's keys share one slot):
//   <prefix>:session:{<tenant>:<session>}:seq     string  the last assigned seq (INCRBY)
//   <prefix>:session:{<tenant>:<session>}:stream  stream  the replay log: entry id `<seq>-0`, field `e` = the event
//                                                          as JSON {type, data, at}; MAXLEN = replayLimit, exactly
//   <prefix>:session:{<tenant>:<session>}         channel one message per published batch: `<first seq>\n[events]`
// Both keys expire about replayTtlSeconds after the session's last publish (within a hundredth of it).
//
// Why one Lua script per publish: numbering (INCRBY), appending (XADD) and delivering (PUBLISH) must happen in the
// same order for every batch, or a subscriber could see seq 8 before seq 7, or a replay could hold an event no
// subscriber got. Redis runs a script without interleaving any other command, so batches from any number of
// processes get consecutive, non-overlapping seqs, and reach the log and the channel in seq order. A sequence
// that has no counter (new session, TTL expiry, Redis lost its data) starts at the publisher's clock in
// microseconds, as the in-process bus does after a restart, so seqs never go back.
//
// Delivery: one subscriber connection per bus, one SUBSCRIBE per session with listeners (reference-counted). A
// subscription starts at the session's counter read after the SUBSCRIBE took effect: it gets every event above it,
// in seq order, once. Each message is checked against the last seq delivered on its channel: a gap (messages lost
// while the subscriber connection was down) is filled from the replay log before going on, and after a reconnect
// the channel catches up from the log even if nothing new is published.

import { Logger } from '@nestjs/common';
import type { SessionEvent, SessionEventInput } from '@canopy/core';
import type { Redis } from 'ioredis';

import { callListener, logListenerError, type ListenerErrorHandler } from '../in-process/listener-errors';
import type { EventBus, ReplayResult, Unsubscribe } from '../ports';
import { LuaScript } from './lua-script';
import { checkNoKeyPrefix, checkPrefix, keyPart } from './redis-keys';
import { RedisPubSub, type Release } from './redis-pubsub';

export interface RedisEventBusOptions {
  /** Runs the publish script and the reads; owned by the caller (close() leaves it open). */
  redis: Redis;
  /**
   * A connection for SUBSCRIBE only; several adapters may share one. Default: `redis.duplicate()`, opened on the
   * first subscribe and closed by close().
   */
  subscriber?: Redis;
  /** Starts every key and channel name (no braces). */
  prefix: string;
  /** How many of a session's latest events its replay log keeps (a positive integer). */
  replayLimit: number;
  /** How long a session's log and counter outlive its last publish. */
  replayTtlSeconds: number;
  /** Wall-clock milliseconds: stamps `at` and sets where a session's sequence starts. */
  now?: () => number;
  /** Where a throwing subscriber's error goes (default: an error log line). */
  onListenerError?: ListenerErrorHandler;
}

type Listener = (event: SessionEvent) => void;

/** An event as the log and the channel carry it (seq and sessionId come from the entry id and the key). */
interface StoredEvent {
  type: SessionEvent['type'];
  data: SessionEvent['data'];
  at: number;
}

interface Subscription {
  listener: Listener;
  /** Delivers events above this seq; null while the subscription is starting (events wait in `buffer`). */
  after: number | null;
  buffer: SessionEvent[];
}

const CATCH_UP = 'catch-up';

interface Channel {
  sessionId: string;
  name: string;
  streamKey: string;
  subs: Set<Subscription>;
  /** The last seq handed to the subscriptions; null until the first one started. */
  cursor: number | null;
  /** Batches (and catch-ups after a reconnect) waiting behind a gap being filled from the log. */
  backlog: (SessionEvent[] | typeof CATCH_UP)[];
  draining: boolean;
  listening: Promise<Release>;
}

interface Gap {
  from: number;
  /** Inclusive; null: up to the end of the log. */
  to: number | null;
}

// KEYS[1] the seq counter, KEYS[2] the replay stream. ARGV[1] the channel, ARGV[2] where a fresh sequence starts
// minus one, ARGV[3] the replay limit, ARGV[4] the TTL in seconds, ARGV[5..] the events as JSON.
// Seqs stay below 2^53, which Lua numbers hold exactly; string.format('%d') prints them without an exponent.
// The hot path is INCRBY, XADD per event, TTL and PUBLISH: a counter INCRBY created (it answers `count`: real
// counters start at the clock in microseconds) is a fresh sequence, set above the clock and the log's tail; the
// TTLs are set again only once they ran down by a hundredth (at least a second), not at every publish.
const PUBLISH_LUA = `
local count = #ARGV - 4
local ttl = tonumber(ARGV[4])
local last = redis.call('INCRBY', KEYS[1], count)
local refresh = false
if last == count then
  local base = tonumber(ARGV[2])
  local tail = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
  if tail then
    local tailSeq = tonumber(string.match(tail[1], '^%d+'))
    if tailSeq > base then base = tailSeq end
  end
  last = base + count
  redis.call('SET', KEYS[1], string.format('%d', last))
  refresh = true
end
local first = last - count + 1
for i = 1, count do
  redis.call('XADD', KEYS[2], 'MAXLEN', ARGV[3], string.format('%d-0', first + i - 1), 'e', ARGV[4 + i])
end
if refresh or redis.call('TTL', KEYS[2]) < ttl - math.max(1, math.floor(ttl / 100)) then
  redis.call('EXPIRE', KEYS[1], ttl)
  redis.call('EXPIRE', KEYS[2], ttl)
end
local firstSeq = string.format('%d', first)
redis.call('PUBLISH', ARGV[1], firstSeq .. '\\n[' .. table.concat(ARGV, ',', 5) .. ']')
return firstSeq
`;

const publishScript = new LuaScript(PUBLISH_LUA);

// KEYS[1] the seq counter, KEYS[2] the replay stream. ARGV[1] where a fresh sequence starts minus one, ARGV[2] the
// TTL in seconds. A counter that exists is answered as it is; else it is set where a first publish would start
// the sequence (above the clock and the log's tail) minus one, so the next publish continues right after it.
const ANCHOR_LUA = `
local current = redis.call('GET', KEYS[1])
if current then return current end
local base = tonumber(ARGV[1])
local tail = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)[1]
if tail then
  local tailSeq = tonumber(string.match(tail[1], '^%d+'))
  if tailSeq > base then base = tailSeq end
end
local anchored = string.format('%d', base)
redis.call('SET', KEYS[1], anchored, 'EX', tonumber(ARGV[2]))
return anchored
`;

const anchorScript = new LuaScript(ANCHOR_LUA);

export class RedisEventBus implements EventBus {
  private readonly logger = new Logger(RedisEventBus.name);
  private readonly redis: Redis;
  private subscriber: Redis | null;
  private ownsSubscriber = false;
  private pubsub: RedisPubSub | null = null;
  private stopCatchUp: (() => void) | null = null;
  private readonly prefix: string;
  private readonly replayLimit: number;
  private readonly replayTtlSeconds: number;
  private readonly now: () => number;
  private readonly onListenerError: ListenerErrorHandler;
  private readonly channels = new Map<string, Channel>();
  private closed = false;

  constructor(options: RedisEventBusOptions) {
    if (!Number.isSafeInteger(options.replayLimit) || options.replayLimit < 1) {
      throw new RangeError(`replayLimit must be a positive integer, got ${options.replayLimit}`);
    }
    if (!Number.isSafeInteger(options.replayTtlSeconds) || options.replayTtlSeconds < 1) {
      throw new RangeError(`replayTtlSeconds must be a positive integer, got ${options.replayTtlSeconds}`);
    }
    checkNoKeyPrefix(options.redis);
    this.redis = options.redis;
    this.subscriber = options.subscriber ?? null;
    this.prefix = checkPrefix(options.prefix);
    this.replayLimit = options.replayLimit;
    this.replayTtlSeconds = options.replayTtlSeconds;
    this.now = options.now ?? Date.now;
    this.onListenerError = options.onListenerError ?? logListenerError(RedisEventBus.name);
  }

  async publish(tenantId: string, sessionId: string, events: SessionEventInput[]): Promise<SessionEvent[]> {
    if (this.closed) throw closedError();
    if (events.length === 0) return [];
    const keys = this.keys(tenantId, sessionId);
    const at = this.now();
    const start = Math.max(1, Math.floor(at * 1000));
    const encoded = events.map(({ type, data }) => JSON.stringify({ type, data, at } satisfies StoredEvent));
    const first = Number(
      await publishScript.run(
        this.redis,
        [keys.seq, keys.stream],
        [keys.channel, start - 1, this.replayLimit, this.replayTtlSeconds, ...encoded],
      ),
    );
    return events.map((input, i) => ({ ...input, seq: first + i, sessionId, at }));
  }

  async subscribe(tenantId: string, sessionId: string, listener: Listener): Promise<Unsubscribe> {
    if (this.closed) throw closedError();
    const channel = this.channel(tenantId, sessionId);
    const sub: Subscription = { listener, after: null, buffer: [] };
    channel.subs.add(sub);
    try {
      await channel.listening;
      // Read after the SUBSCRIBE took effect: every event above this seq reaches the channel (or its log).
      const after = await this.lastSeq(tenantId, sessionId);
      if (channel.cursor === null) channel.cursor = after;
      sub.after = after;
      const buffered = sub.buffer;
      sub.buffer = [];
      for (const event of buffered) {
        if (event.seq > after && channel.subs.has(sub)) callListener(listener, event, this.onListenerError);
      }
    } catch (error) {
      await this.leave(channel, sub);
      throw error;
    }
    return () => this.leave(channel, sub);
  }

  async replay(tenantId: string, sessionId: string, after: number): Promise<ReplayResult> {
    const keys = this.keys(tenantId, sessionId);
    const from = after < 0 ? 0 : Math.floor(after) + 1;
    const reads = this.redis.multi().get(keys.seq).xrange(keys.stream, '-', '+', 'COUNT', 1);
    if (Number.isSafeInteger(from)) reads.xrange(keys.stream, String(from), '+');
    const [counter, head, range] = unwrap(await reads.exec());
    const lastSeq = counter ? Number(counter) : 0;
    const oldest = (head as StreamEntry[])[0];
    const firstRetained = oldest ? entrySeq(oldest) : lastSeq + 1;
    return {
      events: ((range ?? []) as StreamEntry[]).map((entry) => decodeEntry(sessionId, entry)),
      complete: lastSeq <= after || firstRetained <= after + 1,
      lastSeq,
    };
  }

  async lastSeq(tenantId: string, sessionId: string): Promise<number> {
    const value = await this.redis.get(this.keys(tenantId, sessionId).seq);
    return value ? Number(value) : 0;
  }

  async anchor(tenantId: string, sessionId: string): Promise<number> {
    if (this.closed) throw closedError();
    const keys = this.keys(tenantId, sessionId);
    const start = Math.max(2, Math.floor(this.now() * 1000));
    return Number(
      await anchorScript.run(this.redis, [keys.seq, keys.stream], [start - 1, this.replayTtlSeconds]),
    );
  }

  async forget(tenantId: string, sessionId: string): Promise<void> {
    // The counter stays until its TTL, so the session's sequence goes on above the forgotten events.
    await this.redis.del(this.keys(tenantId, sessionId).stream);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stopCatchUp?.();
    const channels = [...this.channels.values()];
    this.channels.clear();
    await Promise.all(
      channels.map(async (channel) => {
        channel.subs.clear();
        channel.backlog.length = 0;
        const release = await channel.listening.catch(() => null);
        await release?.();
      }),
    );
    if (this.ownsSubscriber && this.subscriber) await quit(this.subscriber);
  }

  private keys(tenantId: string, sessionId: string) {
    const session = `${this.prefix}:session:{${keyPart(tenantId)}:${keyPart(sessionId)}}`;
    return { seq: `${session}:seq`, stream: `${session}:stream`, channel: session };
  }

  /** The channel of a session, subscribing to it at the first listener. */
  private channel(tenantId: string, sessionId: string): Channel {
    const keys = this.keys(tenantId, sessionId);
    const existing = this.channels.get(keys.channel);
    if (existing) return existing;
    const channel: Channel = {
      sessionId,
      name: keys.channel,
      streamKey: keys.stream,
      subs: new Set(),
      cursor: null,
      backlog: [],
      draining: false,
      listening: this.pubSub().listen('channel', keys.channel, (_name, message) =>
        this.receive(channel, message),
      ),
    };
    channel.listening.catch(() => undefined); // a failure reaches the subscribe() calls awaiting it
    this.channels.set(keys.channel, channel);
    return channel;
  }

  private pubSub(): RedisPubSub {
    if (!this.pubsub) {
      if (!this.subscriber) {
        this.subscriber = this.redis.duplicate({ enableAutoPipelining: false });
        this.ownsSubscriber = true;
        this.subscriber.on('error', (error: Error) =>
          this.logger.warn(`subscriber connection: ${error.message}`),
        );
      }
      this.pubsub = RedisPubSub.of(this.subscriber);
      this.stopCatchUp = this.pubsub.onResubscribed(() => {
        for (const channel of this.channels.values()) {
          if (channel.cursor === null) continue;
          channel.backlog.push(CATCH_UP);
          this.drain(channel);
        }
      });
    }
    return this.pubsub;
  }

  private async leave(channel: Channel, sub: Subscription): Promise<void> {
    if (!channel.subs.delete(sub) || channel.subs.size > 0) return;
    if (this.channels.get(channel.name) === channel) this.channels.delete(channel.name);
    const release = await channel.listening.catch(() => null);
    await release?.();
  }

  private receive(channel: Channel, message: string): void {
    let events: SessionEvent[];
    try {
      events = decodeBatch(channel.sessionId, message);
    } catch (error) {
      this.logger.error(`undecodable message on ${channel.name}: ${String(error)}`);
      return;
    }
    channel.backlog.push(events);
    this.drain(channel);
  }

  /** Hands the backlog to the subscriptions in order; stops at a gap until the log has filled it. */
  private drain(channel: Channel): void {
    if (channel.draining) return;
    channel.draining = true;
    for (let item = channel.backlog.shift(); item; item = channel.backlog.shift()) {
      const gap = this.gapBefore(channel, item);
      if (gap) {
        const batch = item;
        void this.fill(channel, gap).then(() => {
          if (batch !== CATCH_UP) this.dispatch(channel, batch);
          channel.draining = false;
          this.drain(channel);
        });
        return;
      }
      if (item !== CATCH_UP) this.dispatch(channel, item);
    }
    channel.draining = false;
  }

  private gapBefore(channel: Channel, item: SessionEvent[] | typeof CATCH_UP): Gap | null {
    const cursor = channel.cursor;
    if (cursor === null) return null;
    if (item === CATCH_UP) return { from: cursor + 1, to: null };
    const next = item.find((event) => event.seq > cursor);
    return next && next.seq > cursor + 1 ? { from: cursor + 1, to: next.seq - 1 } : null;
  }

  /**
   * Delivers what the log holds of a gap. What it no longer holds (trimmed, or seqs never assigned because the
   * sequence restarted at the clock) is skipped.
   */
  private async fill(channel: Channel, gap: Gap): Promise<void> {
    try {
      const entries = await this.redis.xrange(
        channel.streamKey,
        String(gap.from),
        gap.to === null ? '+' : String(gap.to),
      );
      this.dispatch(
        channel,
        entries.map((entry) => decodeEntry(channel.sessionId, entry)),
      );
    } catch (error) {
      this.logger.warn(`could not read the replay log of ${channel.name} to fill a gap: ${String(error)}`);
    }
    if (gap.to !== null && channel.cursor !== null && channel.cursor < gap.to) channel.cursor = gap.to;
  }

  /** Delivers events above the channel's cursor to every subscription, each batch to the same subscriptions. */
  private dispatch(channel: Channel, events: SessionEvent[]): void {
    const cursor = channel.cursor;
    const fresh = cursor === null ? events : events.filter((event) => event.seq > cursor);
    const last = fresh[fresh.length - 1];
    if (!last) return;
    channel.cursor = last.seq;
    // A subscription added while this batch is being delivered (by a listener) gets none of it.
    const subs = [...channel.subs];
    for (const event of fresh) {
      for (const sub of subs) {
        if (!channel.subs.has(sub)) continue; // removed by an earlier listener
        if (sub.after === null) sub.buffer.push(event);
        else if (event.seq > sub.after) callListener(sub.listener, event, this.onListenerError);
      }
    }
  }
}

type StreamEntry = [id: string, fields: string[]];

function entrySeq(entry: StreamEntry): number {
  return Number(entry[0].slice(0, entry[0].indexOf('-')));
}

function toEvent(sessionId: string, seq: number, stored: StoredEvent): SessionEvent {
  return { type: stored.type, data: stored.data, seq, sessionId, at: stored.at } as SessionEvent;
}

function decodeEntry(sessionId: string, entry: StreamEntry): SessionEvent {
  const [field, value] = entry[1];
  if (field !== 'e' || value === undefined) throw new Error(`unexpected replay log entry ${entry[0]}`);
  return toEvent(sessionId, entrySeq(entry), JSON.parse(value) as StoredEvent);
}

function decodeBatch(sessionId: string, message: string): SessionEvent[] {
  const newline = message.indexOf('\n');
  const first = Number(message.slice(0, newline));
  if (newline < 0 || !Number.isSafeInteger(first)) throw new Error('no first seq');
  const stored = JSON.parse(message.slice(newline + 1)) as StoredEvent[];
  return stored.map((event, i) => toEvent(sessionId, first + i, event));
}

/** The results of a MULTI, throwing the first command error. */
function unwrap(results: [error: Error | null, result: unknown][] | null): unknown[] {
  if (!results) throw new Error('the replay transaction was aborted');
  return results.map(([error, result]) => {
    if (error) throw error;
    return result;
  });
}

async function quit(connection: Redis): Promise<void> {
  try {
    await connection.quit();
  } catch {
    connection.disconnect();
  }
}

function closedError(): Error {
  return new Error('RedisEventBus is closed');
}
