// The distributed runtime's LiveRegistry: every instance's presence per live session in Redis, with a TTL each
// instance keeps refreshing (heartbeat), merged into one entry per session on read; GET /v1/live sees the whole
// cluster through it.
//
// Keys (ids percent-encoded; every key carries the hash tag {live}, so the registry lives in one Redis Cluster slot
// and each script can touch the session and both indexes atomically; it is small: one entry per live session):
//   <prefix>:{live}:presence:<tenant>:<session>:<instance>  string  `<order> <presence JSON>`, expires after
//                                                                    presenceTtlMs unless refreshed
//   <prefix>:{live}:session:<tenant>:<session>              hash    since, created, and `i:<instance>` per presence;
//                                                                    outlives its presences (TTL refreshed with them)
//   <prefix>:{live}:tenant:<tenant>                         zset    the tenant's live sessions (score: since)
//   <prefix>:{live}:all                                     zset    `<tenant>:<session>` of every tenant
//   <prefix>:{live}:order                                   counter upsert order (the latest presence describes the
//                                                                    session) and creation order (same-ms tie-break)
//
// A dead instance stops refreshing, its presence keys expire, and the next read drops them: a script that reads a
// session also removes its expired presences and, when none is left, the session and its index entries. Doing that
// inside the script keeps the cleanup from racing an upsert of the same session.

import { Logger } from '@nestjs/common';
import type { RedisConnection } from '@canopy/redis';

import type { LiveEntry, LivePresence, LiveRegistry } from '../ports';
import { LuaScript } from './lua-script';
import { checkNoKeyPrefix, checkPrefix, keyPart } from './redis-keys';

export interface RedisLiveRegistryOptions {
  /** Owned by the caller (close() leaves it open). */
  redis: RedisConnection;
  /** Starts every key (no braces). */
  prefix: string;
  /** How long a presence survives without a heartbeat (default 30 s). */
  presenceTtlMs?: number;
  /** Wall-clock milliseconds: when a session became live. */
  now?: () => number;
}

export const DEFAULT_PRESENCE_TTL_MS = 30_000;

// Shared by every script: ARGV[1] is the key root `<prefix>:{live}:`. load() reads a session, dropping expired
// presences, and deletes it with its index entries when none is left. Returns nil, or {since, created, presences}.
const LOAD_LUA = `
local root = ARGV[1]
local function load(t, s)
  local sessionKey = root .. 'session:' .. t .. ':' .. s
  local fields = redis.call('HGETALL', sessionKey)
  local since, created = nil, nil
  local presences = {}
  for k = 1, #fields, 2 do
    local field = fields[k]
    if field == 'since' then since = fields[k + 1]
    elseif field == 'created' then created = fields[k + 1]
    else
      local value = redis.call('GET', root .. 'presence:' .. t .. ':' .. s .. ':' .. string.sub(field, 3))
      if value then presences[#presences + 1] = value else redis.call('HDEL', sessionKey, field) end
    end
  end
  if #presences == 0 or not since then
    redis.call('DEL', sessionKey)
    redis.call('ZREM', root .. 'tenant:' .. t, s)
    redis.call('ZREM', root .. 'all', t .. ':' .. s)
    return nil
  end
  local out = {since, created}
  for k = 1, #presences do out[k + 2] = presences[k] end
  return out
end
-- Extends a key's TTL to ttl, never shortens it (one command unless the key has no TTL yet).
local function refresh(key, ttl)
  if redis.call('PEXPIRE', key, ttl, 'GT') == 0 and redis.call('PTTL', key) == -1 then
    redis.call('PEXPIRE', key, ttl)
  end
end
`;

// ARGV[2..4] tenant, session, instance; ARGV[5] the presence JSON; ARGV[6] TTL ms; ARGV[7] now ms. Returns 1 when
// the session was not live (no presence left) before this one, else 0.
// While this instance's own presence is still there (the common case: a subscriber came or went, the status
// changed), the session is live and its entry and indexes hold the presence: SET XX replaces it, the entry's TTL is
// extended, and nothing else is read (four commands with the script's own). Only a new presence loads the entry.
const UPSERT_LUA = `${LOAD_LUA}
local t, s, i, ttl = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[6])
local sessionKey = root .. 'session:' .. t .. ':' .. s
local presenceKey = root .. 'presence:' .. t .. ':' .. s .. ':' .. i
local value = string.format('%d', redis.call('INCR', root .. 'order')) .. ' ' .. ARGV[5]
if redis.call('SET', presenceKey, value, 'PX', ttl, 'XX') then
  refresh(sessionKey, ttl)
  return 0
end
local created = 0
if not load(t, s) then
  created = 1
  local order = redis.call('INCR', root .. 'order')
  redis.call('HSET', sessionKey, 'since', ARGV[7], 'created', string.format('%d', order))
  redis.call('ZADD', root .. 'tenant:' .. t, ARGV[7], s)
  redis.call('ZADD', root .. 'all', ARGV[7], t .. ':' .. s)
end
redis.call('SET', presenceKey, value, 'PX', ttl)
redis.call('HSET', sessionKey, 'i:' .. i, '1')
refresh(sessionKey, ttl)
return created
`;

// ARGV[2..4] tenant, session, instance. Returns 1 when the session was live and is not any more, else 0.
const REMOVE_LUA = `${LOAD_LUA}
local t, s, i = ARGV[2], ARGV[3], ARGV[4]
local sessionKey = root .. 'session:' .. t .. ':' .. s
local existed = redis.call('EXISTS', sessionKey)
redis.call('DEL', root .. 'presence:' .. t .. ':' .. s .. ':' .. i)
redis.call('HDEL', sessionKey, 'i:' .. i)
if existed == 1 and not load(t, s) then return 1 end
return 0
`;

// ARGV[2..3] tenant, session.
const GET_LUA = `${LOAD_LUA}
return load(ARGV[2], ARGV[3])
`;

// ARGV[2] a tenant, or '' with ARGV[3] = 'all'. Returns {tenant, session, since, created, presences...} per session.
const LIST_LUA = `${LOAD_LUA}
local out = {}
local function add(t, s)
  local session = load(t, s)
  if session then
    local row = {t, s}
    for k = 1, #session do row[k + 2] = session[k] end
    out[#out + 1] = row
  end
end
if ARGV[3] == 'all' then
  for _, member in ipairs(redis.call('ZRANGE', root .. 'all', 0, -1)) do
    local colon = string.find(member, ':', 1, true)
    add(string.sub(member, 1, colon - 1), string.sub(member, colon + 1))
  end
else
  for _, s in ipairs(redis.call('ZRANGE', root .. 'tenant:' .. ARGV[2], 0, -1)) do add(ARGV[2], s) end
end
return out
`;

// ARGV[2] TTL ms; then tenant, session, instance per presence. Returns the (1-based) positions of presences that had
// already expired (the caller upserts them again).
const HEARTBEAT_LUA = `${LOAD_LUA}
local ttl = tonumber(ARGV[2])
local missing = {}
for k = 3, #ARGV, 3 do
  local t, s, i = ARGV[k], ARGV[k + 1], ARGV[k + 2]
  if redis.call('PEXPIRE', root .. 'presence:' .. t .. ':' .. s .. ':' .. i, ttl) == 1 then
    refresh(root .. 'session:' .. t .. ':' .. s, ttl)
  else
    missing[#missing + 1] = (k - 3) / 3 + 1
  end
end
return missing
`;

const scripts = {
  upsert: new LuaScript(UPSERT_LUA),
  remove: new LuaScript(REMOVE_LUA),
  get: new LuaScript(GET_LUA),
  list: new LuaScript(LIST_LUA),
  heartbeat: new LuaScript(HEARTBEAT_LUA),
};

/** A session as the scripts return it: since, created, then `<order> <JSON>` per live presence. */
type SessionReply = [since: string, created: string, ...presences: string[]];

interface Live {
  tenantId: string;
  id: string;
  sinceMs: number;
  created: number;
  presences: { order: number; presence: LivePresence }[];
}

export class RedisLiveRegistry implements LiveRegistry {
  readonly presenceTtlMs: number;
  private readonly redis: RedisConnection;
  private readonly root: string;
  private readonly now: () => number;
  /** The presences this registry wrote and has not removed: what heartbeat() keeps alive. */
  private readonly mine = new Map<string, LivePresence>();
  private closed = false;

  constructor(options: RedisLiveRegistryOptions) {
    const ttl = options.presenceTtlMs ?? DEFAULT_PRESENCE_TTL_MS;
    if (!Number.isSafeInteger(ttl) || ttl < 1) {
      throw new RangeError(`presenceTtlMs must be a positive integer, got ${ttl}`);
    }
    this.presenceTtlMs = ttl;
    checkNoKeyPrefix(options.redis);
    this.redis = options.redis;
    this.root = `${checkPrefix(options.prefix)}:{live}:`;
    this.now = options.now ?? Date.now;
  }

  async upsert(presence: LivePresence): Promise<{ created: boolean }> {
    const copy = { ...presence };
    this.mine.set(mineKey(copy.tenantId, copy.id, copy.instance), copy);
    return { created: (await this.write(copy)) === 1 };
  }

  async remove(tenantId: string, id: string, instance: string): Promise<{ gone: boolean }> {
    this.mine.delete(mineKey(tenantId, id, instance));
    const gone = await this.run(scripts.remove, [keyPart(tenantId), keyPart(id), keyPart(instance)]);
    return { gone: gone === 1 };
  }

  async get(tenantId: string, id: string): Promise<LiveEntry | null> {
    const reply = (await this.run(scripts.get, [keyPart(tenantId), keyPart(id)])) as SessionReply | null;
    return reply ? merge(decode(tenantId, id, reply)) : null;
  }

  async list(tenantId: string | null): Promise<LiveEntry[]> {
    const args = tenantId === null ? ['', 'all'] : [keyPart(tenantId), 'tenant'];
    const rows = (await this.run(scripts.list, args)) as [string, string, ...SessionReply][];
    const lives = rows.map(([t, s, ...reply]) => decode(decodeURIComponent(t), decodeURIComponent(s), reply));
    lives.sort((a, b) => b.sinceMs - a.sinceMs || b.created - a.created);
    return lives.map(merge);
  }

  /**
   * Refreshes the TTL of every presence this registry wrote; writes again one that already expired (the process
   * was stalled longer than the TTL). Call it well within presenceTtlMs, e.g. with startLiveRegistryHeartbeat.
   */
  async heartbeat(): Promise<void> {
    if (this.closed || this.mine.size === 0) return;
    const presences = [...this.mine.values()];
    const args: string[] = [String(this.presenceTtlMs)];
    for (const p of presences) args.push(keyPart(p.tenantId), keyPart(p.id), keyPart(p.instance));
    const missing = (await scripts.heartbeat.run(this.redis, [`${this.root}order`], [this.root, ...args])) as
      number[] | null;
    for (const position of missing ?? []) {
      const presence = presences[position - 1];
      // Not if it was removed or replaced meanwhile: that call has the last word.
      if (
        presence &&
        this.mine.get(mineKey(presence.tenantId, presence.id, presence.instance)) === presence
      ) {
        await this.write(presence);
      }
    }
  }

  /** Removes the presences this registry still holds (the instance is going away); the connection stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const presences = [...this.mine.values()];
    this.mine.clear();
    await Promise.all(
      presences.map((p) =>
        this.run(scripts.remove, [keyPart(p.tenantId), keyPart(p.id), keyPart(p.instance)]),
      ),
    );
  }

  /** Writes a presence; 1 when the session was not live before it. */
  private async write(presence: LivePresence): Promise<unknown> {
    return this.run(scripts.upsert, [
      keyPart(presence.tenantId),
      keyPart(presence.id),
      keyPart(presence.instance),
      JSON.stringify(presence),
      String(this.presenceTtlMs),
      String(Math.floor(this.now())),
    ]);
  }

  private run(script: LuaScript, args: string[]): Promise<unknown> {
    // The order counter is declared as the key: it carries the {live} tag, so Cluster routes to the registry's slot.
    return script.run(this.redis, [`${this.root}order`], [this.root, ...args]);
  }
}

/** Calls registry.heartbeat() every intervalMs (default a third of the TTL); returns a function that stops it. */
export function startLiveRegistryHeartbeat(
  registry: Pick<RedisLiveRegistry, 'heartbeat' | 'presenceTtlMs'>,
  options: { intervalMs?: number; onError?: (error: unknown) => void } = {},
): () => void {
  const logger = new Logger(RedisLiveRegistry.name);
  const onError =
    options.onError ?? ((error: unknown) => logger.warn(`live registry heartbeat failed: ${String(error)}`));
  let running = false;
  const timer = setInterval(
    () => {
      if (running) return; // a slow heartbeat is not stacked with the next one
      running = true;
      registry
        .heartbeat()
        .catch(onError)
        .finally(() => {
          running = false;
        });
    },
    options.intervalMs ?? Math.max(1, Math.floor(registry.presenceTtlMs / 3)),
  );
  timer.unref();
  return () => clearInterval(timer);
}

function decode(tenantId: string, id: string, [since, created, ...presences]: SessionReply): Live {
  return {
    tenantId,
    id,
    sinceMs: Number(since),
    created: Number(created),
    presences: presences.map((value) => {
      const space = value.indexOf(' ');
      return {
        order: Number(value.slice(0, space)),
        presence: JSON.parse(value.slice(space + 1)) as LivePresence,
      };
    }),
  };
}

/** The rules of the in-process registry: the latest presence describes the session, counts add up. */
function merge(live: Live): LiveEntry {
  const presences = [...live.presences].sort((a, b) => b.order - a.order).map((p) => p.presence);
  const latest = presences[0];
  if (!latest) throw new Error(`live session ${live.id} has no presence`); // the scripts drop such sessions
  return {
    tenantId: live.tenantId,
    id: live.id,
    title: latest.title,
    status: latest.status,
    userId: latest.userId,
    controllers: presences.reduce((sum, p) => sum + p.controllers, 0),
    observers: presences.reduce((sum, p) => sum + p.observers, 0),
    since: new Date(live.sinceMs).toISOString(),
    where: {
      api: presences
        .filter((p) => p.role !== 'worker')
        .map((p) => p.instance)
        .sort(),
      worker: presences.find((p) => p.worker !== null)?.worker ?? null,
    },
  };
}

function mineKey(tenantId: string, id: string, instance: string): string {
  return JSON.stringify([tenantId, id, instance]);
}
