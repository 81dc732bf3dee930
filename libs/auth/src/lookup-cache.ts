/**
 * Answers of a lookup, cached for a while by key and shared while in flight: concurrent misses of one key cost one
 * query (a burst of 100 requests after a cold start or an expiry is one query, not 100 queued on the pool).
 * forget() drops answers and every lookup in flight: a lookup that started before it neither caches its answer nor
 * is shared with requests made after it.
 */
export class LookupCache<K, V> {
  private readonly answers = new Map<K, { value: V; until: number }>();
  private readonly inFlight = new Map<K, Promise<V>>();
  /** Bumped by forget(): a lookup started under an older generation does not cache. */
  private generation = 0;

  constructor(
    private readonly ttlMs: number,
    /** At this many answers the cache is emptied (a bound on memory, not an LRU). */
    private readonly max: number,
  ) {}

  /** The cached answer, else the lookup in flight, else a new lookup; `expiresAt` caps how long an answer lives. */
  async get(key: K, lookup: () => Promise<V>, expiresAt?: (value: V) => number): Promise<V> {
    const cached = this.answers.get(key);
    if (cached && cached.until > Date.now()) return cached.value;
    const shared = this.inFlight.get(key);
    if (shared) return shared;
    const generation = this.generation;
    const started = lookup();
    this.inFlight.set(key, started);
    try {
      const value = await started;
      if (generation === this.generation) {
        if (this.answers.size >= this.max) this.answers.clear();
        const until = Math.min(Date.now() + this.ttlMs, expiresAt?.(value) ?? Infinity);
        this.answers.set(key, { value, until });
      }
      return value;
    } finally {
      if (this.inFlight.get(key) === started) this.inFlight.delete(key);
    }
  }

  /** Forgets the answers `which` selects (every answer without it) and every lookup in flight. */
  forget(which?: (key: K, value: V) => boolean): void {
    this.generation++;
    this.inFlight.clear();
    if (!which) {
      this.answers.clear();
      return;
    }
    for (const [key, answer] of this.answers) if (which(key, answer.value)) this.answers.delete(key);
  }
}
