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
const grid = <CartesianGrid strokeDasharray="3 3" stroke="var(--line)" vertical={false} />;
const tooltip = (
  <Tooltip
    contentStyle={{ background: 'var(--panel)', border: '1px solid var(--line)', color: 'var(--text)' }}
    labelStyle={{ color: 'var(--text)' }}
  />
);

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
              {active.map((p) => (
                <tr key={p.minute} data-testid="minute-row">
                  <td>{p.label}</td>
                  <td data-testid="minute-started">{p.started}</td>
                  <td data-testid="minute-finished">{p.finished}</td>
                  <td data-testid="minute-failed">{p.failed}</td>
                </tr>
              ))}
            </tbody>
          </table>
        }
      >
        <BarChart
          accessibilityLayer={false}
          data={points}
          margin={{ top: 4, right: 8, bottom: 0, left: -20 }}
        >
          {grid}
          <XAxis dataKey="label" {...axis} minTickGap={24} />
          <YAxis allowDecimals={false} {...axis} />
          {tooltip}
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Bar dataKey="started" name="started" fill="var(--chart-2)" isAnimationActive={false} />
          <Bar dataKey="finished" name="finished" fill="var(--chart-1)" isAnimationActive={false} />
          <Bar dataKey="failed" name="failed" fill="var(--chart-3)" isAnimationActive={false} />
        </BarChart>
      </Chart>
      <Chart
        id="tokens"
        title="Tokens per minute"
        table={
          <table data-testid="tokens-per-minute">
            <thead>
              <tr>
                <th>Minute</th>
                <th>Input</th>
                <th>Output</th>
              </tr>
            </thead>
            <tbody>
              {active.map((p) => (
                <tr key={p.minute}>
                  <td>{p.label}</td>
                  <td data-testid="minute-input-tokens">{p.inputTokens}</td>
                  <td data-testid="minute-output-tokens">{p.outputTokens}</td>
                </tr>
              ))}
            </tbody>
          </table>
        }
      >
        <AreaChart
          accessibilityLayer={false}
          data={points}
          margin={{ top: 4, right: 8, bottom: 0, left: -20 }}
        >
          {grid}
          <XAxis dataKey="label" {...axis} minTickGap={24} />
          <YAxis allowDecimals={false} {...axis} />
          {tooltip}
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Area
            dataKey="inputTokens"
            name="input"
            stackId="t"
            stroke="var(--chart-2)"
            fill="var(--chart-2)"
            fillOpacity={0.3}
            isAnimationActive={false}
          />
          <Area
            dataKey="outputTokens"
            name="output"
            stackId="t"
            stroke="var(--chart-1)"
            fill="var(--chart-1)"
            fillOpacity={0.3}
            isAnimationActive={false}
          />
        </AreaChart>
      </Chart>
      <Chart
        id="latency"
        title="Run latency (ms, request to end)"
        table={
          <table data-testid="latency-per-minute">
            <thead>
              <tr>
                <th>Minute</th>
                <th>p50</th>
                <th>p95</th>
              </tr>
            </thead>
            <tbody>
              {points
                .filter((p) => p.p50 !== null)
                .map((p) => (
                  <tr key={p.minute}>
                    <td>{p.label}</td>
                    <td data-testid="minute-p50">{p.p50}</td>
                    <td data-testid="minute-p95">{p.p95}</td>
                  </tr>
                ))}
            </tbody>
          </table>
        }
      >
        <LineChart
          accessibilityLayer={false}
          data={points}
          margin={{ top: 4, right: 8, bottom: 0, left: -12 }}
        >
          {grid}
          <XAxis dataKey="label" {...axis} minTickGap={24} />
          <YAxis {...axis} />
          {tooltip}
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Line dataKey="p50" name="p50" stroke="var(--chart-1)" dot connectNulls isAnimationActive={false} />
          <Line dataKey="p95" name="p95" stroke="var(--chart-4)" dot connectNulls isAnimationActive={false} />
        </LineChart>
      </Chart>
      <Chart
        id="live"
        title="Live sessions"
        table={
          <table data-testid="live-per-minute">
            <thead>
              <tr>
                <th>Minute</th>
                <th>Live</th>
                <th>Busy</th>
                <th>Paused</th>
              </tr>
            </thead>
            <tbody>
              {sampled.map((p) => (
                <tr key={p.minute}>
                  <td>{p.label}</td>
                  <td data-testid="minute-live">{p.live}</td>
                  <td>{p.busy}</td>
                  <td>{p.paused}</td>
                </tr>
              ))}
            </tbody>
          </table>
        }
      >
        <AreaChart
          accessibilityLayer={false}
          data={points}
          margin={{ top: 4, right: 8, bottom: 0, left: -20 }}
        >
          {grid}
          <XAxis dataKey="label" {...axis} minTickGap={24} />
          <YAxis allowDecimals={false} {...axis} />
          {tooltip}
          <Legend wrapperStyle={{ fontSize: 12 }} />
          <Area
            dataKey="live"
            name="live"
            stroke="var(--chart-1)"
            fill="var(--chart-1)"
            fillOpacity={0.2}
            connectNulls
            dot={{ r: 2 }}
            isAnimationActive={false}
          />
          <Area
            dataKey="busy"
            name="busy"
            stroke="var(--chart-4)"
            fill="var(--chart-4)"
            fillOpacity={0.2}
            connectNulls
            dot={{ r: 2 }}
            isAnimationActive={false}
          />
        </AreaChart>
      </Chart>
    </div>
  );
}
