// The dashboard's charts (Recharts, SVG): runs per minute (started, finished, failed), tokens per minute, run
// latency (p50, p95) and live sessions over time, over the last half hour of GET /v1/stats. Each chart has its
// figures in a table beside it too (for screen readers, and for whoever wants the numbers).

import {
  Area,
  AreaChart,
  Bar,
  BarChart,
  CartesianGrid,
  Legend,
  Line,
  LineChart,
  ResponsiveContainer,
  Tooltip,
  XAxis,
  YAxis,
} from 'recharts';
import type { ReactElement, ReactNode } from 'react';
import type { RunStats } from '@canopy/client';

const MINUTES = 30;

interface Point {
  minute: string;
  label: string;
  started: number;
  finished: number;
  failed: number;
  inputTokens: number;
  outputTokens: number;
  p50: number | null;
  p95: number | null;
  live: number | null;
  busy: number | null;
  paused: number | null;
}

/** One point per minute of the last half hour, minutes with nothing counted as zero (live: unknown, null). */
export function chartPoints(stats: RunStats): Point[] {
  const until = Math.floor(Date.parse(stats.until) / 60_000) * 60_000;
  const runs = new Map(stats.perMinute.map((m) => [Date.parse(m.minute), m]));
  const live = new Map(stats.liveSessions.map((m) => [Date.parse(m.minute), m]));
  const points: Point[] = [];
  for (let t = until - (MINUTES - 1) * 60_000; t <= until; t += 60_000) {
    const m = runs.get(t);
    const l = live.get(t);
    points.push({
      minute: new Date(t).toISOString(),
      label: new Date(t).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' }),
      started: m?.started ?? 0,
      finished: m?.finished ?? 0,
      failed: m?.failed ?? 0,
      inputTokens: m?.inputTokens ?? 0,
      outputTokens: m?.outputTokens ?? 0,
      p50: m?.latencyP50Ms ?? null,
      p95: m?.latencyP95Ms ?? null,
      live: l?.live ?? null,
      busy: l?.busy ?? null,
      paused: l?.paused ?? null,
    });
  }
  return points;
}

const axis = { tick: { fontSize: 11 }, stroke: 'var(--line)' };

function Chart({
  id,
  title,
  children,
  table,
}: {
  id: string;
  title: string;
  children: ReactElement;
  table: ReactNode;
}) {
  return (
    <figure className="chart" data-testid={`chart-${id}`}>
      <figcaption>{title}</figcaption>
      {/* The figures below are the chart's text alternative; the drawing itself stays out of the way. */}
      <div className="chart-box" aria-hidden="true">
        <ResponsiveContainer width="100%" height="100%">
          {children}
        </ResponsiveContainer>
      </div>
      <details>
        <summary className="hint">The figures</summary>
        <div className="table-wrap">{table}</div>
      </details>
    </figure>
  );
}

interface Column {
  header: string;
  value: (p: Point) => ReactNode;
  testId?: string;
}

/** A chart's figures: a row per minute of `rows`, the minute then each column. */
function FigureTable({
  testId,
  rows,
  columns,
  rowTestId,
}: {
  testId: string;
  rows: Point[];
  columns: Column[];
  rowTestId?: string;
}) {
  return (
    <table data-testid={testId}>
      <thead>
        <tr>
          <th>Minute</th>
          {columns.map((c) => (
            <th key={c.header}>{c.header}</th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((p) => (
          <tr key={p.minute} data-testid={rowTestId}>
            <td>{p.label}</td>
            {columns.map((c) => (
              <td key={c.header} data-testid={c.testId}>
                {c.value(p)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const MARGIN = { top: 4, right: 8, bottom: 0, left: -20 };

/** What every chart draws around its series: the grid, the minute axis, the value axis, the tooltip, the legend. */
function frame(wholeNumbers = true): ReactElement[] {
  return [
    <CartesianGrid key="grid" strokeDasharray="3 3" stroke="var(--line)" vertical={false} />,
    <XAxis key="x" dataKey="label" {...axis} minTickGap={24} />,
    <YAxis key="y" allowDecimals={!wholeNumbers} {...axis} />,
    <Tooltip
      key="tooltip"
      contentStyle={{ background: 'var(--panel)', border: '1px solid var(--line)', color: 'var(--text)' }}
      labelStyle={{ color: 'var(--text)' }}
    />,
    <Legend key="legend" wrapperStyle={{ fontSize: 12 }} />,
  ];
}

/** An area series of `key` in the chart colour `colour`. */
function area(key: keyof Point, name: string, colour: number, extra: Record<string, unknown> = {}) {
  return (
    <Area
      key={key}
      dataKey={key}
      name={name}
      stroke={`var(--chart-${colour})`}
      fill={`var(--chart-${colour})`}
      isAnimationActive={false}
      {...extra}
    />
  );
}

export function Charts({ stats }: { stats: RunStats }) {
  const points = chartPoints(stats);
  const active = points.filter((p) => p.started || p.finished || p.failed);
  const sampled = points.filter((p) => p.live !== null);
  return (
    <div className="charts">
      <Chart
        id="runs"
        title="Runs per minute"
        table={
          <FigureTable
            testId="runs-per-minute"
            rows={active}
            rowTestId="minute-row"
            columns={[
              { header: 'Started', value: (p) => p.started, testId: 'minute-started' },
              { header: 'Finished', value: (p) => p.finished, testId: 'minute-finished' },
              { header: 'Failed', value: (p) => p.failed, testId: 'minute-failed' },
            ]}
          />
        }
      >
        <BarChart accessibilityLayer={false} data={points} margin={MARGIN}>
          {frame()}
          <Bar dataKey="started" name="started" fill="var(--chart-2)" isAnimationActive={false} />
          <Bar dataKey="finished" name="finished" fill="var(--chart-1)" isAnimationActive={false} />
          <Bar dataKey="failed" name="failed" fill="var(--chart-3)" isAnimationActive={false} />
        </BarChart>
      </Chart>
      <Chart
        id="tokens"
        title="Tokens per minute"
        table={
          <FigureTable
            testId="tokens-per-minute"
            rows={active}
            columns={[
              { header: 'Input', value: (p) => p.inputTokens, testId: 'minute-input-tokens' },
              { header: 'Output', value: (p) => p.outputTokens, testId: 'minute-output-tokens' },
            ]}
          />
        }
      >
        <AreaChart accessibilityLayer={false} data={points} margin={MARGIN}>
          {frame()}
          {area('inputTokens', 'input', 2, { stackId: 't', fillOpacity: 0.3 })}
          {area('outputTokens', 'output', 1, { stackId: 't', fillOpacity: 0.3 })}
        </AreaChart>
      </Chart>
      <Chart
        id="latency"
        title="Run latency (ms, request to end)"
        table={
          <FigureTable
            testId="latency-per-minute"
            rows={points.filter((p) => p.p50 !== null)}
            columns={[
              { header: 'p50', value: (p) => p.p50, testId: 'minute-p50' },
              { header: 'p95', value: (p) => p.p95, testId: 'minute-p95' },
            ]}
          />
        }
      >
        <LineChart accessibilityLayer={false} data={points} margin={{ ...MARGIN, left: -12 }}>
          {frame(false)}
          <Line dataKey="p50" name="p50" stroke="var(--chart-1)" dot connectNulls isAnimationActive={false} />
          <Line dataKey="p95" name="p95" stroke="var(--chart-4)" dot connectNulls isAnimationActive={false} />
        </LineChart>
      </Chart>
      <Chart
        id="live"
        title="Live sessions"
        table={
          <FigureTable
            testId="live-per-minute"
            rows={sampled}
            columns={[
              { header: 'Live', value: (p) => p.live, testId: 'minute-live' },
              { header: 'Busy', value: (p) => p.busy },
              { header: 'Paused', value: (p) => p.paused },
            ]}
          />
        }
      >
        <AreaChart accessibilityLayer={false} data={points} margin={MARGIN}>
          {frame()}
          {area('live', 'live', 1, { fillOpacity: 0.2, connectNulls: true, dot: { r: 2 } })}
          {area('busy', 'busy', 4, { fillOpacity: 0.2, connectNulls: true, dot: { r: 2 } })}
        </AreaChart>
      </Chart>
    </div>
  );
}
