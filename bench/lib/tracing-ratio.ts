// The otel bench's figure: runs/s with tracing on against off, measured in alternating rounds (bench/otel.bench.ts).

export interface OtelMeasure {
  tracing: boolean;
  perSec: number;
  p50Ms: number | null;
  p99Ms: number | null;
  errors: number;
}

/** on/off of the summed runs/s, and the per-round ratios (each round's on against its off). */
export function tracingRatio(measures: readonly OtelMeasure[]): { ratio: number; rounds: number[] } {
  const sum = (tracing: boolean) =>
    measures.filter((m) => m.tracing === tracing).reduce((total, m) => total + m.perSec, 0);
  const rounds: number[] = [];
  for (let i = 0; i + 1 < measures.length; i += 2) {
    const pair = [measures[i]!, measures[i + 1]!];
    const on = pair.find((m) => m.tracing);
    const off = pair.find((m) => !m.tracing);
    if (on && off && off.perSec > 0) rounds.push(on.perSec / off.perSec);
  }
  const off = sum(false);
  return { ratio: off > 0 ? sum(true) / off : Number.NaN, rounds };
}
