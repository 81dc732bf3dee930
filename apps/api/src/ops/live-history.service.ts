// Live sessions over time, for the dashboard's chart: the live registry says what is live now and keeps no
// history, so this api instance samples it (every SAMPLE_MS while it runs, and whenever statistics are asked
// for) and keeps, per tenant and minute, the most sessions seen live, busy and paused at once. In memory only,
// for the last day: a fresh instance has watched only since it started. In a distributed deployment the
// registry is the whole deployment's, so any instance's samples describe all of it.

import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import type { LiveSample } from '@canopy/core';
import { SessionManager } from '@canopy/manager';

const SAMPLE_MS = 15_000;
const KEEP_MINUTES = 1_440;
/** The bucket of every tenant together (the admin's view). */
const ALL = '*';

type Counts = Omit<LiveSample, 'minute'>;

@Injectable()
export class LiveHistory implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('LiveHistory');
  /** tenant (or ALL) -> minute start (ms) -> the most seen at once in that minute. */
  private readonly minutes = new Map<string, Map<number, Counts>>();
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly manager: SessionManager) {}

  onModuleInit(): void {
    this.timer = setInterval(() => {
      this.sample().catch((err: unknown) => this.logger.warn({ err }, 'could not sample live sessions'));
    }, SAMPLE_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    clearInterval(this.timer);
  }

  /** Reads the registry once and records what is live now. */
  async sample(now = Date.now()): Promise<void> {
    const entries = await this.manager.whereLiveEverywhere();
    const minute = Math.floor(now / 60_000) * 60_000;
    const counts = new Map<string, Counts>([[ALL, { live: 0, busy: 0, paused: 0 }]]);
    for (const entry of entries) {
      for (const key of [entry.tenantId, ALL]) {
        const c = counts.get(key) ?? { live: 0, busy: 0, paused: 0 };
        c.live++;
        if (entry.status === 'busy') c.busy++;
        if (entry.status === 'paused') c.paused++;
        counts.set(key, c);
      }
    }
    // A tenant with nothing live now still gets its zero for this minute once it has any history.
    for (const key of this.minutes.keys())
      if (!counts.has(key)) counts.set(key, { live: 0, busy: 0, paused: 0 });
    for (const [key, c] of counts) {
      let byMinute = this.minutes.get(key);
      if (!byMinute) this.minutes.set(key, (byMinute = new Map<number, Counts>()));
      const seen = byMinute.get(minute);
      byMinute.set(
        minute,
        seen
          ? {
              live: Math.max(seen.live, c.live),
              busy: Math.max(seen.busy, c.busy),
              paused: Math.max(seen.paused, c.paused),
            }
          : c,
      );
      for (const m of byMinute.keys()) if (m < minute - KEEP_MINUTES * 60_000) byMinute.delete(m);
    }
  }

  /** The samples of one tenant (null: every tenant) since `since`, oldest first. */
  series(tenantId: string | null, since: Date): LiveSample[] {
    const byMinute = this.minutes.get(tenantId ?? ALL);
    if (!byMinute) return [];
    return [...byMinute.entries()]
      .filter(([minute]) => minute >= since.getTime())
      .sort(([a], [b]) => a - b)
      .map(([minute, c]) => ({ minute: new Date(minute).toISOString(), ...c }));
  }
}
