// The dashboard's per-model and per-user view over a chosen window (the last 7, 30, 90 or 365 days): runs, latency
// and time to first token p50 / p95, tokens, cost, error rate and the share of thumbs up, from GET /v1/stats/models (the daily rollup, so a
// year costs the same as a week). Fetched again when the window or the grouping changes, or `refreshKey` does.

import { useEffect, useState } from 'react';
import type { Canopy, ModelStatsView } from '@canopy/client';
import { errorText } from './format';

const WINDOWS = [7, 30, 90, 365] as const;
const DAY_MS = 86_400_000;

const percent = (share: number | null) => (share === null ? '–' : `${Math.round(share * 100)}%`);
const ms = (value: number | null) =>
  value === null
    ? '–'
    : value >= 10_000
      ? `${(value / 1000).toFixed(0)} s`
      : value >= 1000
        ? `${(value / 1000).toFixed(1)} s`
        : `${value} ms`;

export function ModelStatsPanel({
  canopy,
  refreshKey,
}: {
  canopy: Canopy;
  /** Changes when the figures may have moved (a run finished). */
  refreshKey: string | number;
}) {
  const [days, setDays] = useState<(typeof WINDOWS)[number]>(30);
  const [groupBy, setGroupBy] = useState<'model' | 'user'>('model');
  const [view, setView] = useState<ModelStatsView | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let cancelled = false;
    const to = new Date();
    const from = new Date(to.getTime() - (days - 1) * DAY_MS);
    canopy.modelStats({ from: from.toISOString(), to: to.toISOString(), groupBy }).then(
      (v) => {
        if (cancelled) return;
        setView(v);
        setError(null);
      },
      (err: unknown) => !cancelled && setError(errorText(err)),
    );
    return () => {
      cancelled = true;
    };
  }, [canopy, days, groupBy, refreshKey]);

  return (
    <section className="panel wide" aria-labelledby="models-title" data-testid="model-stats">
      <div className="model-stats-head">
        <h2 id="models-title">{groupBy === 'model' ? 'Models' : 'Users'}</h2>
        <div className="filters" role="group" aria-label="Group by">
          {(['model', 'user'] as const).map((g) => (
            <button
              key={g}
              type="button"
              aria-pressed={groupBy === g}
              onClick={() => setGroupBy(g)}
              data-testid={`model-stats-by-${g}`}
            >
              Per {g}
            </button>
          ))}
        </div>
        <label className="model-stats-window">
          Window
          <select
            value={days}
            onChange={(e) => setDays(Number(e.target.value) as (typeof WINDOWS)[number])}
            data-testid="model-stats-window"
          >
            {WINDOWS.map((d) => (
              <option key={d} value={d}>
                last {d} days
              </option>
            ))}
          </select>
        </label>
      </div>
      {error && <p className="error">{error}</p>}
      {/* Many columns: on a phone the table scrolls sideways, so its region takes focus for the keyboard. */}
      <div className="table-wrap" tabIndex={0} role="region" aria-labelledby="models-title">
        <table data-testid="model-stats-table">
          <thead>
            <tr>
              <th>{groupBy === 'model' ? 'Model' : 'User'}</th>
              <th>Runs</th>
              <th>Latency p50 / p95</th>
              <th>First token p50 / p95</th>
              <th className="optional">Tokens</th>
              <th className="optional">Cost (USD)</th>
              <th>Errors</th>
              <th>Thumbs up</th>
            </tr>
          </thead>
          <tbody>
            {(view?.data ?? []).map((row) => (
              <tr key={row.key ?? ''} data-testid="model-stats-row" data-key={row.key ?? ''}>
                <td data-testid="model-stats-key">
                  {row.key ?? (groupBy === 'user' ? '(no user)' : '(none)')}
                </td>
                <td data-testid="model-stats-runs">{row.runs}</td>
                <td data-testid="model-stats-latency">
                  {ms(row.latencyP50Ms)} / {ms(row.latencyP95Ms)}
                </td>
                <td data-testid="model-stats-ttft">
                  {ms(row.timeToFirstTokenP50Ms)} / {ms(row.timeToFirstTokenP95Ms)}
                </td>
                <td className="optional" data-testid="model-stats-tokens">
                  {row.totalTokens}
                </td>
                <td className="optional">{row.totalCost.toFixed(4)}</td>
                <td data-testid="model-stats-errors">
                  {row.errors} ({percent(row.errorRate)})
                </td>
                <td data-testid="model-stats-thumbs">
                  {percent(row.thumbsUpShare)}
                  {row.thumbsUp + row.thumbsDown > 0 && (
                    <span className="muted"> of {row.thumbsUp + row.thumbsDown}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {view && view.data.length === 0 && <p className="muted">No run in this window.</p>}
      {view && (
        <p className="hint">
          {view.from} to {view.to} (UTC days); latency from a run&apos;s start to its end, first token from
          its start to its first output, both within 25%.
        </p>
      )}
    </section>
  );
}
