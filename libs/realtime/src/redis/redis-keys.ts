// How the Redis adapters spell keys and channels: every name starts with the deployment's prefix, and every id
// inside a name is percent-encoded, so ids containing ':' or braces can neither collide with another pair of ids
// nor open a Redis Cluster hash tag of their own.

/** Checks a key prefix: non-empty and without braces (a brace would move the Cluster hash tag into the prefix). */
export function checkPrefix(prefix: string): string {
  if (prefix.length === 0 || /[{}]/.test(prefix)) {
    throw new RangeError(
      `a Redis key prefix must be non-empty and contain no braces, got ${JSON.stringify(prefix)}`,
    );
  }
  return prefix;
}

/** An id as one segment of a key or channel name (no ':', '{', '}' or '%' left unencoded). */
export function keyPart(id: string): string {
  return encodeURIComponent(id);
}

/** Escapes glob characters, so a literal string can lead a PSUBSCRIBE or SCAN MATCH pattern. */
export function escapeGlob(literal: string): string {
  return literal.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * Refuses a connection with ioredis' own keyPrefix: it would prefix the keys a script declares but not the ones it
 * derives, nor channels. The adapters' `prefix` option covers all of them.
 */
export function checkNoKeyPrefix(redis: { options: { keyPrefix?: string } }): void {
  if (redis.options.keyPrefix) {
    throw new RangeError('pass the key prefix as the adapter option `prefix`, not as ioredis keyPrefix');
  }
}
