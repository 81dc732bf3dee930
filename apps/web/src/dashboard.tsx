// The dashboard: the live sessions of the deployment (refreshed on every activity event), the activity feed as
// it streams, and runs per minute and usage per tenant, added up in this page from the feed's run events since
// it was opened (the API keeps no such totals).

import { useCallback, useEffect, useRef, useState } from 'react';
import type { ActivityEvent, Canopy, LiveEntry, Usage } from '@canopy/client';
import { errorText, shortJson, time } from './format';
import { sessionHref } from './route';

const FEED_LENGTH = 200;
const MINUTES_SHOWN = 10;

interface Totals {
  /** run_started per minute (ms since the epoch / 60 000). */
  started: Map<number, number>;
  finished: Map<number, number>;
  tenants: Map<string, { runs: number; inputTokens: number; outputTokens: number; totalCost: number }>;
}

function count(totals: Totals, event: ActivityEvent): Totals {
  if (event.type !== 'run_started' && event.type !== 'run_finished') return totals;
  const minute = Math.floor(event.at / 60_000);
  const started = new Map(totals.started);
  const finished = new Map(totals.finished);
  const tenants = new Map(totals.tenants);
  if (event.type === 'run_started') started.set(minute, (started.get(minute) ?? 0) + 1);
  else {
    finished.set(minute, (finished.get(minute) ?? 0) + 1);
    const usage: Usage = event.data.usage;
    const t = tenants.get(event.tenantId) ?? { runs: 0, inputTokens: 0, outputTokens: 0, totalCost: 0 };
    tenants.set(event.tenantId, {
      runs: t.runs + 1,
      inputTokens: t.inputTokens + usage.inputTokens,
      outputTokens: t.outputTokens + usage.outputTokens,
      totalCost: t.totalCost + usage.totalCost,
    });
  }
  return { started, finished, tenants };
}

export function Dashboard({ canopy }: { canopy: Canopy }) {
  const [openedAt] = useState(() => Date.now());
  const [live, setLive] = useState<LiveEntry[] | null>(null);
  const [liveError, setLiveError] = useState<string | null>(null);
  const [feed, setFeed] = useState<ActivityEvent[]>([]);
  const [feedError, setFeedError] = useState<string | null>(null);
  const [totals, setTotals] = useState<Totals>({
    started: new Map(),
    finished: new Map(),
    tenants: new Map(),
  });
  const [now, setNow] = useState(() => Date.now());
  const refreshing = useRef<Promise<void> | null>(null);
  const again = useRef(false);

  /** One list request at a time; events during it ask for one more afterwards. */
  const refresh = useCallback(() => {
    if (refreshing.current) {
      again.current = true;
      return;
    }
    refreshing.current = canopy.live
      .list()
      .then(
        (entries) => {
          setLive(entries);
          setLiveError(null);
        },
        (err: unknown) => setLiveError(errorText(err)),
      )
      .finally(() => {
        refreshing.current = null;
        if (again.current) {
          again.current = false;
          refresh();
        }
      });
  }, [canopy]);

  useEffect(() => {
    refresh();
    const controller = new AbortController();
    void (async () => {
      try {
        for await (const event of canopy.activity({ signal: controller.signal })) {
          setFeed((f) => [event, ...f].slice(0, FEED_LENGTH));
          setTotals((t) => count(t, event));
          refresh();
        }
      } catch (err) {
        if (!controller.signal.aborted) setFeedError(errorText(err));
      }
    })();
    // The feed says when something changes; the timer keeps the clock and the idle times honest.
    const timer = setInterval(() => {
      setNow(Date.now());
      refresh();
    }, 10_000);
    return () => {
      controller.abort();
      clearInterval(timer);
    };
  }, [canopy, refresh]);

  // The clock ticks every 10 s; an event may already belong to a later minute.
  const thisMinute = Math.floor(Math.max(now, feed[0]?.at ?? 0) / 60_000);
  const minutes = Array.from({ length: MINUTES_SHOWN }, (_, i) => thisMinute - i).filter(
    (m) => m >= Math.floor(openedAt / 60_000),
  );

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
                key={entry.id}
                onClick={() => (location.hash = sessionHref(entry.id))}
                data-testid="live-row"
                data-session-id={entry.id}
              >
                <td>
                  <a href={sessionHref(entry.id)}>{entry.title ?? entry.id}</a>
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
        <h2>Since this page opened ({time(openedAt)})</h2>
        <p className="muted">
          Counted in this browser from the activity feed's run events; not stored anywhere.
        </p>
        <h3>Runs per minute</h3>
        <table data-testid="runs-per-minute">
          <thead>
            <tr>
              <th>Minute</th>
              <th>Started</th>
              <th>Finished</th>
            </tr>
          </thead>
          <tbody>
            {minutes.map((m) => (
              <tr key={m} data-testid="minute-row">
                <td>{new Date(m * 60_000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}</td>
                <td data-testid="minute-started">{totals.started.get(m) ?? 0}</td>
                <td data-testid="minute-finished">{totals.finished.get(m) ?? 0}</td>
              </tr>
            ))}
          </tbody>
        </table>
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
            {[...totals.tenants].map(([tenant, t]) => (
              <tr key={tenant} data-testid="usage-row" data-tenant-id={tenant}>
                <td>
                  <code>{tenant}</code>
                </td>
                <td data-testid="usage-runs">{t.runs}</td>
                <td data-testid="usage-input">{t.inputTokens}</td>
                <td data-testid="usage-output">{t.outputTokens}</td>
                <td>{t.totalCost.toFixed(4)}</td>
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
              <a href={sessionHref(e.data.id)}>{e.data.id}</a>{' '}
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
