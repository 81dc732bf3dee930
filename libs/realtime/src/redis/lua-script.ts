// A Lua script run by its SHA1 (EVALSHA), loaded with EVAL only when the server does not know it yet (first use,
// or after a restart emptied the script cache). A NOSCRIPT reply means nothing ran, so the fallback never runs a
// script twice.

import { createHash } from 'node:crypto';

import type { RedisConnection } from '@canopy/redis';

export class LuaScript {
  private readonly sha: string;

  constructor(private readonly lua: string) {
    this.sha = createHash('sha1').update(lua).digest('hex');
  }

  async run(redis: RedisConnection, keys: string[], args: (string | number)[]): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.lua, keys.length, ...keys, ...args);
    }
  }
}
