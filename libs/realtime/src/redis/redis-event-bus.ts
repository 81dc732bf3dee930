// The distributed runtime's EventBus: per-session sequences, bounded replay logs and delivery in Redis, shared by
// every api and worker process, so any instance can serve any session.
//
// Keys (ids percent-encoded; the braces are a Redis Cluster hash tag, so a session's key and channel share a slot):
//   <prefix>:session:{<tenant>:<session>}:stream  stream  the replay log and the sequence: one entry per published
//                                                          batch, id `<first seq>-0`, fields `n` (events in it)
//                                                          and `e` (the events as a JSON array of {type, data, at});
//                                                          an entry with n = 0 is an anchor: the sequence is at
//                                                          its id. MAXLEN ~ replayLimit entries.
//   <prefix>:session:{<tenant>:<session>}         channel one message per published batch: `<first seq>\n[events]`
// The stream expires about replayTtlSeconds after the session's last publish (within a hundredth of it).
//
// A publish is two commands: XADD and PUBLISH. The stream is the sequence: an entry's id is the first seq of its
// batch, and XADD with an explicit id refuses one that is not above the stream's last entry. Each bus remembers
// where the sessions it published to are (the last seq it appended), numbers the next batch right after it, and
// sends `XADD NOMKSTREAM <last + 1>-0`: any other process that appended meanwhile wrote an entry whose id is at
// least `<last + 1>`, so the XADD fails instead of reusing a seq. Then (and only then) it PUBLISHes the batch
// with its seqs. A bus that does not know the session, whose XADD failed, or whose stream is gone (expired, or
// Redis lost it) appends by a Lua script that reads the tail and continues after it, or, without a stream, starts
// a fresh sequence at the publisher's clock in microseconds (as the in-process bus does after a restart), so
// seqs never go back. A bus appends the batches of one session one at a time (each XADD after the previous one's
// answer), and sends each PUBLISH before the next XADD, so one process's batches reach the channel in seq order.
// Batches of two processes can reach the channel out of order; a subscriber then fills the gap from the log
// (every entry below a published one is in the log before it is published) and drops the late message.
// The stream's TTL is set when a script creates it and again by a publish once this bus's last EXPIRE is a
// hundredth of the TTL old (at least a second): a third command on one publish in many.
//
// Delivery: one subscriber connection per bus, one SUBSCRIBE per session with listeners (reference-counted). A
// subscription starts at the session's last seq read after the SUBSCRIBE took effect: it gets every event above
// it, in seq order, once. Each message is checked against the last seq delivered on its channel: a gap (messages
// lost while the subscriber connection was down, a batch of another process not yet published, a publisher that
// died between its XADD and its PUBLISH) is filled from the replay log before going on, and after a reconnect
// the channel catches up from the log even if nothing new is published.

import { Logger } from '@nestjs/common';
import type { SessionEvent, SessionEventInput } from '@canopy/core';

import { callListener, logListenerError, type ListenerErrorHandler } from '../in-process/listener-errors';
import type { EventBus, ReplayResult, Unsubscribe } from '../ports';
import { LuaScript } from './lua-script';
import { subscriberConnection, isCluster, type RedisConnection } from '@canopy/redis';
import { checkNoKeyPrefix, checkPrefix, keyPart } from './redis-keys';
import { RedisPubSub, type Release } from './redis-pubsub';

export interface RedisEventBusOptions {
  /** Runs the publish script and the reads; owned by the caller (close() leaves it open). */
  redis: RedisConnection;
  /**
   * A connection for SUBSCRIBE only; several adapters may share one. Default: `redis.duplicate()`, opened on the
   * first subscribe and closed by close().
   */
  subscriber?: RedisConnection;
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
  /** How many sessions' sequences it remembers (default KNOWN_SEQUENCES; tests set fewer). */
  knownSequences?: number;
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

// Lua helpers of the scripts below. An entry's last seq: its id's first part plus its events minus one (an anchor,
// n = 0, is the seq itself). Seqs stay below 2^53, which Lua numbers hold exactly; string.format('%d') prints them
// without an exponent.
const LAST_OF_LUA = `
local function lastOf(entry)
  local first = tonumber(string.match(entry[1], '^%d+'))
  local count = 0
  for i = 1, #entry[2], 2 do
    if entry[2][i] == 'n' then count = tonumber(entry[2][i + 1]) end
  end
  if count == 0 then return first end
  return first + count - 1
end
local tail = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)[1]
`;

// KEYS[1] the stream. ARGV[1] where a fresh sequence starts, ARGV[2] the replay limit, ARGV[3] the TTL in seconds,
// ARGV[4] the number of events, ARGV[5] the events as a JSON array. Appends after the tail, or starts the sequence
// at ARGV[1] without one; answers the batch's first seq.
const APPEND_LUA = `${LAST_OF_LUA}
local first = tonumber(ARGV[1])
if tail then first = lastOf(tail) + 1 end
local firstSeq = string.format('%d', first)
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[2], firstSeq .. '-0', 'n', ARGV[4], 'e', ARGV[5])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return firstSeq
`;

const appendScript = new LuaScript(APPEND_LUA);

// KEYS[1] the stream. ARGV[1] where a first publish would start the sequence minus one, ARGV[2] the TTL in
// seconds. A sequence that exists is answered as it is; else an anchor fixes it at ARGV[1], so the next publish
// continues right after it.
const ANCHOR_LUA = `${LAST_OF_LUA}
if tail then return string.format('%d', lastOf(tail)) end
redis.call('XADD', KEYS[1], ARGV[1] .. '-0', 'n', '0', 'e', '[]')
redis.call('EXPIRE', KEYS[1], ARGV[2])
return ARGV[1]
`;

const anchorScript = new LuaScript(ANCHOR_LUA);

// KEYS[1] the stream. ARGV[1] the TTL in seconds. Replaces the log by an anchor at its last seq: the events are
// gone, the sequence goes on above them.
const FORGET_LUA = `${LAST_OF_LUA}
if not tail then return 0 end
local last = string.format('%d', lastOf(tail))
redis.call('DEL', KEYS[1])
redis.call('XADD', KEYS[1], last .. '-0', 'n', '0', 'e', '[]')
redis.call('EXPIRE', KEYS[1], ARGV[1])
return 1
`;

const forgetScript = new LuaScript(FORGET_LUA);

/** What XADD answers when the id given is not above the stream's last entry's. */
const ID_TAKEN = 'equal or smaller than the target stream top item';

/**
 * How many sessions a bus remembers the last seq of (about the least recently published to are forgotten first: a
 * sequence moves to the end of the map when more than half of this many moves happened since its last one).
 */
const KNOWN_SEQUENCES = 10_000;

/** What a bus knows of a session's sequence, and the tail of its appends (one at a time). */
interface Sequence {
  keys: SessionKeys;
  /** The last seq this bus appended; null: unknown (the next append reads the tail). */
  last: number | null;
  /** When this bus last set the stream's TTL (its clock, ms). */
  refreshedAt: number;
  /** The last append queued, until it has been sent its PUBLISH; null: none (the next one starts at once). */
  appending: Promise<Appended> | null;
  /** The bus's count of moves to the end of `sequences` at this one's last move. */
  moved: number;
}

/** How an append ended: its first seq and its PUBLISH's answer, or what stopped it (an append never rejects). */
type Appended = { first: number; published: Promise<unknown> } | { failed: unknown };

const ignore = (): void => undefined;

export class RedisEventBus implements EventBus {
  private readonly logger = new Logger(RedisEventBus.name);
  private readonly redis: RedisConnection;
  private subscriber: RedisConnection | null;
  /** Sharded pub/sub (SPUBLISH / SSUBSCRIBE) on a Redis Cluster, plain pub/sub on one server. */
  private readonly sharded: boolean;
  private ownsSubscriber = false;
  private pubsub: RedisPubSub | null = null;
  private stopCatchUp: (() => void) | null = null;
  private readonly prefix: string;
  private readonly replayLimit: number;
  private readonly replayTtlSeconds: number;
  private readonly now: () => number;
  private readonly onListenerError: ListenerErrorHandler;
  /** Between two EXPIREs of a stream by this bus: a hundredth of the TTL, at least a second. */
  private readonly refreshMs: number;
  private readonly channels = new Map<string, Channel>();
  private readonly sequences = new Map<string, Sequence>();
  private readonly knownSequences: number;
  /** Moves of sequences to the end of `sequences` (and insertions) so far. */
  private moves = 0;
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
    this.sharded = isCluster(options.redis);
    this.subscriber = options.subscriber ?? null;
    this.prefix = checkPrefix(options.prefix);
    this.replayLimit = options.replayLimit;
    this.replayTtlSeconds = options.replayTtlSeconds;
    this.refreshMs = Math.max(1_000, options.replayTtlSeconds * 10);
    this.now = options.now ?? Date.now;
    this.onListenerError = options.onListenerError ?? logListenerError(RedisEventBus.name);
    this.knownSequences = options.knownSequences ?? KNOWN_SEQUENCES;
    if (!Number.isSafeInteger(this.knownSequences) || this.knownSequences < 1) {
      throw new RangeError(`knownSequences must be a positive integer, got ${options.knownSequences}`);
    }
  }

  async publish(tenantId: string, sessionId: string, events: SessionEventInput[]): Promise<SessionEvent[]> {
    if (this.closed) throw closedError();
    const count = events.length;
    if (count === 0) return [];
    const sequence = this.sequence(tenantId, sessionId);
    const at = this.now();
    let batch = '[';
    for (let i = 0; i < count; i++) {
      const { type, data } = events[i]!;
      batch += (i === 0 ? '' : ',') + JSON.stringify({ type, data, at } satisfies StoredEvent);
    }
    batch += ']';
    // This session's appends go one at a time: behind the one in flight, else at once (the usual case: a run's
    // deltas are published one after the other).
    const previous = sequence.appending;
    const appending = previous
      ? previous.then(() => this.append(sequence, count, batch, at))
      : this.append(sequence, count, batch, at);
    sequence.appending = appending;
    const appended = await appending;
    if (sequence.appending === appending) sequence.appending = null;
    if ('failed' in appended) throw appended.failed;
    await appended.published;
    const first = appended.first;
    const published = new Array<SessionEvent>(count);
    for (let i = 0; i < count; i++) {
      const { type, data } = events[i]!;
      published[i] = { type, data, seq: first + i, sessionId, at } as SessionEvent;
    }
    return published;
  }

  /**
   * Appends a batch to the session's log and sends its PUBLISH; settles once the PUBLISH is sent (with its answer
   * as `published`), so the session's next append goes after it. First the two-command append right after the last
   * seq this bus assigned; when it must read the tail (another process appended meanwhile, or the stream is gone, or
   * this bus does not know the session), the script.
   */
  private async append(sequence: Sequence, count: number, batch: string, at: number): Promise<Appended> {
    const { stream, channel } = sequence.keys;
    let first: number | null = null;
    try {
      if (sequence.last !== null) {
        first = sequence.last + 1;
        const added = this.redis.xadd(
          stream,
          'NOMKSTREAM',
          'MAXLEN',
          '~',
          this.replayLimit,
          `${first}-0`,
          'n',
          count,
          'e',
          batch,
        );
        // Sent with the XADD (one round trip); on a stream that is gone it does nothing, and the script sets it.
        if (at - sequence.refreshedAt >= this.refreshMs) {
          sequence.refreshedAt = at;
          this.redis.expire(stream, this.replayTtlSeconds).catch(() => {
            sequence.refreshedAt = Number.NEGATIVE_INFINITY;
          });
        }
        try {
          if ((await added) === null) first = null;
        } catch (error) {
          if (!(error instanceof Error && error.message.includes(ID_TAKEN))) throw error;
          first = null;
        }
      }
      if (first === null) {
        // The fresh sequence's start is above what this bus assigned, even if the clock went back.
        const start = Math.max(1, Math.floor(at * 1000), (sequence.last ?? 0) + 1);
        first = Number(
          await appendScript.run(
            this.redis,
            [stream],
            [start, this.replayLimit, this.replayTtlSeconds, count, batch],
          ),
        );
        sequence.refreshedAt = at;
      }
    } catch (failed) {
      // The append may or may not have happened (a timeout): the next one reads the tail.
      sequence.last = null;
      return { failed };
    }
    sequence.last = first + count - 1;
    const message = `${first}\n${batch}`;
    const published = this.sharded
      ? this.redis.spublish(channel, message)
      : this.redis.publish(channel, message);
    published.catch(ignore); // awaited by publish()
    return { first, published };
  }

  /** What this bus knows of a session's sequence (remembered for about the most recently used sessions). */
  private sequence(tenantId: string, sessionId: string): Sequence {
    const id = `${tenantId}\n${sessionId}`;
    let sequence = this.sequences.get(id);
    if (sequence) {
      // Moved to the end only now and then: a move is a delete and an insert, on every publish too dear.
      if (this.moves - sequence.moved <= this.knownSequences / 2) return sequence;
      this.sequences.delete(id);
    } else {
      sequence = {
        keys: this.keys(tenantId, sessionId),
        last: null,
        refreshedAt: Number.NEGATIVE_INFINITY,
        appending: null,
        moved: 0,
      };
      if (this.sequences.size >= this.knownSequences) this.forgetOne();
    }
    sequence.moved = ++this.moves;
    this.sequences.set(id, sequence);
    return sequence;
  }

  /**
   * Forgets the sequence least recently moved that has no append in flight. Forgetting is safe: an unknown sequence
   * is appended to by the script, which reads the tail. One with an append in flight stays, so the session's next
   * append still goes after it (a forgotten one's next append would run beside it, and could overtake it).
   */
  private forgetOne(): void {
    for (const [id, known] of this.sequences) {
      if (known.appending !== null) continue;
      this.sequences.delete(id);
      return;
    }
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
    const { stream } = this.keys(tenantId, sessionId);
    const from = after < 0 ? 0 : Math.floor(after) + 1;
    // One consistent view: the tail (the last seq), the head (where the log starts), the entry that may hold
    // `from` (its batch began at or before it), and every entry beginning from `from` on.
    const reads = this.redis
      .multi()
      .xrevrange(stream, '+', '-', 'COUNT', 1)
      .xrange(stream, '-', '+', 'COUNT', 1);
    if (Number.isSafeInteger(from)) {
      reads
        .xrevrange(stream, String(Math.max(0, from - 1)), '-', 'COUNT', 1)
        .xrange(stream, String(from), '+');
    }
    const [tail, head, before, range] = unwrap(await reads.exec()) as (StreamEntry[] | undefined)[];
    const lastSeq = tail?.[0] ? decodeEntry(sessionId, tail[0]).last : 0;
    // The log holds the last replayLimit events (entries are batches: Redis may keep a few more, not shown).
    const oldest = head?.[0] ? decodeEntry(sessionId, head[0]) : null;
    const firstRetained = Math.max(oldest ? oldest.from : lastSeq + 1, lastSeq - this.replayLimit + 1);
    const events = [...(before ?? []), ...(range ?? [])]
      .flatMap((entry) => decodeEntry(sessionId, entry).events)
      .filter((event) => event.seq > after && event.seq >= firstRetained);
    return { events, complete: lastSeq <= after || firstRetained <= after + 1, lastSeq };
  }

  async lastSeq(tenantId: string, sessionId: string): Promise<number> {
    const [tail] = (await this.redis.xrevrange(
      this.keys(tenantId, sessionId).stream,
      '+',
      '-',
      'COUNT',
      1,
    )) as StreamEntry[];
    return tail ? decodeEntry(sessionId, tail).last : 0;
  }

  async anchor(tenantId: string, sessionId: string): Promise<number> {
    if (this.closed) throw closedError();
    const { stream } = this.keys(tenantId, sessionId);
    const start = Math.max(2, Math.floor(this.now() * 1000));
    return Number(await anchorScript.run(this.redis, [stream], [start - 1, this.replayTtlSeconds]));
  }

  async forget(tenantId: string, sessionId: string): Promise<void> {
    await forgetScript.run(this.redis, [this.keys(tenantId, sessionId).stream], [this.replayTtlSeconds]);
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

  private keys(tenantId: string, sessionId: string): SessionKeys {
    const session = `${this.prefix}:session:{${keyPart(tenantId)}:${keyPart(sessionId)}}`;
    return { stream: `${session}:stream`, channel: session };
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
      listening: this.pubSub().listen(this.sharded ? 'shard' : 'channel', keys.channel, (_name, message) =>
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
        this.subscriber = subscriberConnection(this.redis);
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
      // The entry that may hold gap.from (its batch began before it), and those that begin in the gap.
      const [before, range] = unwrap(
        await this.redis
          .pipeline()
          .xrevrange(channel.streamKey, String(gap.from - 1), '-', 'COUNT', 1)
          .xrange(channel.streamKey, String(gap.from), gap.to === null ? '+' : String(gap.to))
          .exec(),
      ) as StreamEntry[][];
      this.dispatch(
        channel,
        [...before!, ...range!]
          .flatMap((entry) => decodeEntry(channel.sessionId, entry).events)
          .filter((event) => event.seq >= gap.from && (gap.to === null || event.seq <= gap.to)),
      );
    } catch (error) {
      this.logger.warn(`could not read the replay log of ${channel.name} to fill a gap: ${String(error)}`);
    }
    if (gap.to !== null && channel.cursor !== null && channel.cursor < gap.to) channel.cursor = gap.to;
  }

  /** Delivers events above the channel's cursor to every subscription, each batch to the same subscriptions. */
  private dispatch(channel: Channel, events: SessionEvent[]): void {
    const cursor = channel.cursor;
    // A batch's seqs ascend: when its first is above the cursor (the usual case) it is all fresh, no copy needed.
    const fresh =
      cursor === null || (events[0] !== undefined && events[0].seq > cursor)
        ? events
        : events.filter((event) => event.seq > cursor);
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

interface SessionKeys {
  stream: string;
  channel: string;
}

/** A log entry: its events, and the seqs it covers (an anchor covers none: `from` is above `last`). */
interface LogEntry {
  from: number;
  last: number;
  events: SessionEvent[];
}

function toEvent(sessionId: string, seq: number, stored: StoredEvent): SessionEvent {
  return { type: stored.type, data: stored.data, seq, sessionId, at: stored.at } as SessionEvent;
}

function decodeEntry(sessionId: string, [id, fields]: StreamEntry): LogEntry {
  const first = Number(id.slice(0, id.indexOf('-')));
  const batch = fields[fields.indexOf('e') + 1];
  if (!Number.isSafeInteger(first) || !fields.includes('e') || batch === undefined) {
    throw new Error(`unexpected replay log entry ${id}`);
  }
  const stored = JSON.parse(batch) as StoredEvent[];
  if (stored.length === 0) return { from: first + 1, last: first, events: [] };
  return {
    from: first,
    last: first + stored.length - 1,
    events: stored.map((event, i) => toEvent(sessionId, first + i, event)),
  };
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
  if (!results) throw new Error('the transaction was aborted');
  return results.map(([error, result]) => {
    if (error) throw error;
    return result;
  });
}

async function quit(connection: RedisConnection): Promise<void> {
  try {
    await connection.quit();
  } catch {
    connection.disconnect();
  }
}

function closedError(): Error {
  return new Error('RedisEventBus is closed');
}
