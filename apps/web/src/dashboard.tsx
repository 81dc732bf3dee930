// The dashboard: charts of the last half hour's runs, tokens, latency and live sessions, per-model and per-user
// figures over a chosen window (ModelStatsPanel), the live sessions of the
// deployment (busy and paused first, filtered; a row opens the session as an observer), the activity feed in
// words (starting from the latest stored runs), and usage per tenant. With an API key it shows its tenant; with the
// admin key every tenant, each by name.

import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import type { ActivityEvent, Canopy, LiveEntry, RunStats, TenantInfo } from '@canopy/client';
import { ActivityFeed, itemOfEvent, itemsOfRuns, type FeedItem } from './activity-feed';
import { Charts } from './charts';
import { errorText, time } from './format';
import { LiveTable } from './live-table';
import { ModelStatsPanel } from './model-stats-panel';

const FEED_LENGTH = 200;
const STATS_MINUTES = 60;

/**
 * A loader that runs one request at a time: a call while one is in flight asks for one more afterwards, so a
 * burst of events costs at most two requests and the last answer is never older than the last call.
 */
function useSingleFlight(load: () => Promise<void>): () => void {
  const running = useRef(false);
  const again = useRef(false);
  const run = useCallback(() => {
    if (running.current) {
      again.current = true;
      return;
    }
    running.current = true;
    void load().finally(() => {
      running.current = false;
      if (again.current) {
        again.current = false;
        run();
      }
    });
  }, [load]);
  return run;
}

export function Dashboard({ canopy, allTenants = false }: { canopy: Canopy; allTenants?: boolean }) {
  const [live, setLive] = useState<LiveEntry[] | null>(null);
  const [liveError, setLiveError] = useState<string | null>(null);
  const [events, setEvents] = useState<ActivityEvent[]>([]);
  const [feedError, setFeedError] = useState<string | null>(null);
  const [stats, setStats] = useState<RunStats | null>(null);
  const [statsError, setStatsError] = useState<string | null>(null);
  const [tenants, setTenants] = useState<Map<string, string>>(new Map());
  /** Session titles by tenant and id, from every source that knows one. */
  const [titles, setTitles] = useState<Map<string, string | null>>(new Map());
  const asked = useRef(new Set<string>());
  // An API key sees one tenant: its sessions are known by id alone (its live entries carry no tenant).
  const key = useCallback(
    (tenantId: string, sessionId: string) => (allTenants ? `${tenantId}:${sessionId}` : sessionId),
    [allTenants],
  );

  const learnTitles = useCallback(
    (found: Array<[string, string, string | null]>) => {
      if (found.length === 0) return;
      setTitles((map) => {
        const next = new Map(map);
        for (const [tenantId, id, title] of found) next.set(key(tenantId, id), title);
        return next;
      });
    },
    [key],
  );

  const refreshLive = useSingleFlight(
    useCallback(
      () =>
        canopy.live.list().then(
          (entries) => {
            setLive(entries);
            setLiveError(null);
          },
          (err: unknown) => setLiveError(errorText(err)),
        ),
      [canopy],
    ),
  );
  const refreshStats = useSingleFlight(
    useCallback(
      () =>
        canopy.stats(STATS_MINUTES).then(
          (s) => {
            setStats(s);
            setStatsError(null);
            learnTitles(s.recentRuns.map((r) => [r.tenantId, r.sessionId, r.sessionTitle]));
          },
          (err: unknown) => setStatsError(errorText(err)),
        ),
      [canopy, learnTitles],
    ),
  );
  const refreshTenants = useSingleFlight(
    useCallback(async () => {
      if (!allTenants) return;
      try {
        const list: TenantInfo[] = await canopy.admin.listTenants(1_000);
        setTenants(new Map(list.map((t) => [t.id, t.name])));
      } catch {
        // Names fall back to ids.
      }
    }, [canopy, allTenants]),
  );

  useEffect(() => {
    refreshLive();
    refreshStats();
    refreshTenants();
    const controller = new AbortController();
    void (async () => {
      try {
        for await (const event of canopy.activity({ signal: controller.signal })) {
          setEvents((f) => [event, ...f].slice(0, FEED_LENGTH));
          if (event.type === 'title' || event.type === 'opened') {
            learnTitles([[event.tenantId, event.data.id, event.data.title]]);
          }
          refreshLive();
          if (event.type === 'run_started' || event.type === 'run_finished') refreshStats();
        }
      } catch (err) {
        if (!controller.signal.aborted) setFeedError(errorText(err));
      }
    })();
    // The feed says when something changes; the timer keeps the charts' window and the live samples moving.
    const timer = setInterval(() => {
      refreshLive();
      refreshStats();
    }, 10_000);
    return () => {
      controller.abort();
      clearInterval(timer);
    };
  }, [canopy, refreshLive, refreshStats, refreshTenants, learnTitles]);

  useEffect(() => {
    learnTitles((live ?? []).map((e) => [e.tenantId ?? '', e.id, e.title]));
  }, [live, learnTitles]);

  const items = useMemo(() => {
    const byKey = new Map<string, FeedItem>();
    for (const item of [...events.map(itemOfEvent), ...itemsOfRuns(stats?.recentRuns ?? [])]) {
      if (!byKey.has(item.key)) byKey.set(item.key, item);
    }
    return [...byKey.values()].sort((a, b) => b.at - a.at).slice(0, FEED_LENGTH);
  }, [events, stats]);

  // A tenant key can look up a session the feed names but no list had (the admin has no tenant to ask in).
  useEffect(() => {
    if (allTenants) return;
    for (const item of items) {
      const k = key(item.tenantId, item.sessionId);
      if (titles.has(k) || asked.current.has(k)) continue;
      asked.current.add(k);
      canopy
        .session(item.sessionId)
        .get()
        .then(
          (s) => learnTitles([[item.tenantId, s.id, s.title]]),
          () => undefined,
        );
    }
  }, [items, titles, canopy, allTenants, learnTitles, key]);

  const tenantName = allTenants
    ? (id: string) => tenants.get(id) ?? stats?.usageByTenant.find((u) => u.tenantId === id)?.tenantName ?? id
    : null;
  const titleOf = (tenantId: string, sessionId: string) => titles.get(key(tenantId, sessionId)) ?? null;

  return (
    <main className="dashboard" data-testid="dashboard">
      <section className="panel wide" aria-labelledby="charts-title">
        <h2 id="charts-title">Last 30 minutes</h2>
        {statsError && <p className="error">{statsError}</p>}
        {stats ? <Charts stats={stats} /> : <p className="muted">Loading…</p>}
        {stats && (
          <p className="hint">
            From the runs the deployment stored, as of {time(Date.parse(stats.until))}; live sessions as this
            server sampled them.
          </p>
        )}
      </section>

      <ModelStatsPanel canopy={canopy} refreshKey={stats?.until ?? ''} />

      <section className="panel" aria-labelledby="live-title">
        <h2 id="live-title">
          Live sessions{' '}
          <span className="count" data-testid="live-count">
            {live?.length ?? '…'}
          </span>
        </h2>
        {liveError && <p className="error">{liveError}</p>}
        <LiveTable entries={live} tenantName={tenantName} />
      </section>

      <section className="panel" aria-labelledby="activity-title">
        <h2 id="activity-title">Activity</h2>
        {feedError && <p className="error">{feedError}</p>}
        {stats ? (
          <ActivityFeed items={items} titleOf={titleOf} tenantName={tenantName} openable={!allTenants} />
        ) : (
          <p className="muted">Loading…</p>
        )}
      </section>

      <section className="panel wide" aria-labelledby="usage-title">
        <h2 id="usage-title">Usage per tenant, last {STATS_MINUTES} minutes (finished runs)</h2>
        <div className="table-wrap">
          <table data-testid="usage-per-tenant">
            <thead>
              <tr>
                <th>Tenant</th>
                <th>Runs</th>
                <th>Input tokens</th>
                <th>Output tokens</th>
                <th className="optional">Cost (USD)</th>
              </tr>
            </thead>
            <tbody>
              {(stats?.usageByTenant ?? []).map((u) => (
                <tr key={u.tenantId} data-testid="usage-row" data-tenant-id={u.tenantId}>
                  <td data-testid="usage-tenant">{u.tenantName}</td>
                  <td data-testid="usage-runs">{u.runs}</td>
                  <td data-testid="usage-input">{u.inputTokens}</td>
                  <td data-testid="usage-output">{u.outputTokens}</td>
                  <td className="optional">{u.totalCost.toFixed(4)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {stats?.usageByTenant.length === 0 && <p className="muted">No run finished in this window.</p>}
      </section>
    </main>
  );
}
