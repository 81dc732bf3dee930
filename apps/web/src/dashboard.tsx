// The dashboard: the live sessions of the deployment (refreshed on every activity event), the activity feed as
// it streams, and the deployment's run statistics over the last hour (runs started, finished and failed per
// minute, usage per tenant: GET /v1/stats, the tenant's own with an API key, every tenant's with the admin key),
// refreshed when runs start or finish.

import { useCallback, useEffect, useRef, useState } from 'react';
import type { ActivityEvent, Canopy, LiveEntry, RunStats } from '@canopy/client';
import { errorText, shortJson, time } from './format';
import { sessionHref } from './route';

const FEED_LENGTH = 200;
const STATS_MINUTES = 60;
const MINUTES_SHOWN = 10;

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
  const [feed, setFeed] = useState<ActivityEvent[]>([]);
  const [feedError, setFeedError] = useState<string | null>(null);
  const [stats, setStats] = useState<RunStats | null>(null);
  const [statsError, setStatsError] = useState<string | null>(null);
  const [, setNow] = useState(() => Date.now());

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
          },
          (err: unknown) => setStatsError(errorText(err)),
        ),
      [canopy],
    ),
  );

  useEffect(() => {
    refreshLive();
    refreshStats();
    const controller = new AbortController();
    void (async () => {
      try {
        for await (const event of canopy.activity({ signal: controller.signal })) {
          setFeed((f) => [event, ...f].slice(0, FEED_LENGTH));
          refreshLive();
          if (event.type === 'run_started' || event.type === 'run_finished') refreshStats();
        }
      } catch (err) {
        if (!controller.signal.aborted) setFeedError(errorText(err));
      }
    })();
    // The feed says when something changes; the timer keeps the clock, the idle times and the window honest.
    const timer = setInterval(() => {
      setNow(Date.now());
      refreshLive();
      refreshStats();
    }, 10_000);
    return () => {
      controller.abort();
      clearInterval(timer);
    };
  }, [canopy, refreshLive, refreshStats]);

  const minutes = [...(stats?.perMinute ?? [])].reverse().slice(0, MINUTES_SHOWN);

  return (
    <main className="dashboard" data-testid="dashboard">
      <section className="panel">
        <h2>
          Live sessions{' '}
          <span className="count" data-testid="live-count">
            {live?.length ?? '…'}
          </span>
        </h2>
        {liveError && <p className="error">{liveError}</p>}
        <table className="live">
          <thead>
            <tr>
              {allTenants && <th>Tenant</th>}
              <th>Session</th>
              <th>Status</th>
              <th>Controllers</th>
              <th>Observers</th>
              <th>User</th>
              <th>Live since</th>
              <th>Where</th>
            </tr>
          </thead>
          <tbody>
            {live?.map((entry) => (
              <tr
                key={`${entry.tenantId ?? ''}:${entry.id}`}
                // The admin key has no tenant: it watches sessions, it does not open them.
                onClick={allTenants ? undefined : () => (location.hash = sessionHref(entry.id))}
                data-testid="live-row"
                data-session-id={entry.id}
              >
                {allTenants && (
                  <td data-testid="live-tenant">
                    <code>{entry.tenantId?.slice(0, 8)}</code>
                  </td>
                )}
                <td>
                  {allTenants ? (
                    (entry.title ?? entry.id)
                  ) : (
                    <a href={sessionHref(entry.id)}>{entry.title ?? entry.id}</a>
                  )}
                </td>
                <td>
                  <span className={`status status-${entry.status}`} data-testid="live-status">
                    {entry.status}
                  </span>
                </td>
                <td data-testid="live-controllers">{entry.controllers}</td>
                <td data-testid="live-observers">{entry.observers}</td>
                <td>{entry.userId ?? '—'}</td>
                <td>{time(entry.since)}</td>
                <td className="muted">
                  {entry.where.api.join(', ')}
                  {entry.where.worker ? ` · worker ${entry.where.worker}` : ''}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {live?.length === 0 && <p className="muted">No session is live right now.</p>}
      </section>

      <section className="panel stats">
        <h2>Runs, last {STATS_MINUTES} minutes</h2>
        <p className="muted">
          From the runs the deployment stored{stats ? ` (as of ${time(Date.parse(stats.until))})` : ''}.
        </p>
        {statsError && <p className="error">{statsError}</p>}
        <h3>Runs per minute</h3>
        <table data-testid="runs-per-minute">
          <thead>
            <tr>
              <th>Minute</th>
              <th>Started</th>
              <th>Finished</th>
              <th>Failed</th>
            </tr>
          </thead>
          <tbody>
            {minutes.map((m) => (
              <tr key={m.minute} data-testid="minute-row">
                <td>{new Date(m.minute).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}</td>
                <td data-testid="minute-started">{m.started}</td>
                <td data-testid="minute-finished">{m.finished}</td>
                <td data-testid="minute-failed">{m.failed}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {stats?.perMinute.length === 0 && <p className="muted">No run in this window.</p>}
        <h3>Usage per tenant (finished runs)</h3>
        <table data-testid="usage-per-tenant">
          <thead>
            <tr>
              <th>Tenant</th>
              <th>Runs</th>
              <th>Input tokens</th>
              <th>Output tokens</th>
              <th>Cost (USD)</th>
            </tr>
          </thead>
          <tbody>
            {(stats?.usageByTenant ?? []).map((u) => (
              <tr key={u.tenantId} data-testid="usage-row" data-tenant-id={u.tenantId}>
                <td title={u.tenantId}>{u.tenantName}</td>
                <td data-testid="usage-runs">{u.runs}</td>
                <td data-testid="usage-input">{u.inputTokens}</td>
                <td data-testid="usage-output">{u.outputTokens}</td>
                <td>{u.totalCost.toFixed(4)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <section className="panel feed">
        <h2>Activity</h2>
        {feedError && <p className="error">{feedError}</p>}
        {feed.length === 0 && <p className="muted">Waiting for activity…</p>}
        <ol className="activity" data-testid="activity">
          {feed.map((e, i) => (
            <li key={`${e.at}-${feed.length - i}`} data-testid="activity-item" data-type={e.type}>
              <span className="muted">{time(e.at)}</span> <strong>{e.type}</strong>{' '}
              {allTenants ? <code>{e.data.id}</code> : <a href={sessionHref(e.data.id)}>{e.data.id}</a>}{' '}
              <span className="muted">{shortJson(withoutId(e.data))}</span>
            </li>
          ))}
        </ol>
      </section>
    </main>
  );
}

function withoutId(data: ActivityEvent['data']): Record<string, unknown> {
  const { id: _id, ...rest } = data;
  return rest;
}
