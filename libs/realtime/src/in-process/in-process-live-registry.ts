// The embedded runtime's LiveRegistry: every instance's presence per live session, in this process's memory,
// merged into one entry per session on read.

import type { LiveEntry, LivePresence, LiveRegistry } from '../ports';

export interface InProcessLiveRegistryOptions {
  /** Wall-clock milliseconds: when a session became live. */
  now?: () => number;
}

interface Presence {
  presence: LivePresence;
  /** Upsert order across the registry: the latest presence speaks for title, status and user. */
  order: number;
}

interface Live {
  tenantId: string;
  id: string;
  sinceMs: number;
  /** Tie-break for sessions that became live in the same millisecond (the later one is newer). */
  created: number;
  presences: Map<string, Presence>;
}

export class InProcessLiveRegistry implements LiveRegistry {
  private readonly now: () => number;
  private readonly sessions = new Map<string, Live>();
  private counter = 0;

  constructor(options: InProcessLiveRegistryOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  upsert(presence: LivePresence): Promise<{ created: boolean }> {
    const k = key(presence.tenantId, presence.id);
    let live = this.sessions.get(k);
    const created = !live;
    if (!live) {
      live = {
        tenantId: presence.tenantId,
        id: presence.id,
        sinceMs: this.now(),
        created: ++this.counter,
        presences: new Map(),
      };
      this.sessions.set(k, live);
    }
    live.presences.set(presence.instance, { presence: { ...presence }, order: ++this.counter });
    return Promise.resolve({ created });
  }

  remove(tenantId: string, id: string, instance: string): Promise<{ gone: boolean }> {
    const k = key(tenantId, id);
    const live = this.sessions.get(k);
    if (!live || !live.presences.delete(instance)) return Promise.resolve({ gone: false });
    if (live.presences.size > 0) return Promise.resolve({ gone: false });
    this.sessions.delete(k);
    return Promise.resolve({ gone: true });
  }

  get(tenantId: string, id: string): Promise<LiveEntry | null> {
    const live = this.sessions.get(key(tenantId, id));
    return Promise.resolve(live ? merge(live) : null);
  }

  list(tenantId: string | null): Promise<LiveEntry[]> {
    const lives = [...this.sessions.values()].filter(
      (live) => tenantId === null || live.tenantId === tenantId,
    );
    lives.sort((a, b) => b.sinceMs - a.sinceMs || b.created - a.created);
    return Promise.resolve(lives.map(merge));
  }

  close(): Promise<void> {
    this.sessions.clear();
    return Promise.resolve();
  }
}

function merge(live: Live): LiveEntry {
  // Latest first: the newest presence describes the session; the newest non-null worker is the one running.
  const presences = [...live.presences.values()].sort((a, b) => b.order - a.order).map((p) => p.presence);
  const latest = presences[0];
  if (!latest) throw new Error(`live session ${live.id} has no presence`); // remove() deletes such entries
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

function key(tenantId: string, id: string): string {
  return JSON.stringify([tenantId, id]);
}
