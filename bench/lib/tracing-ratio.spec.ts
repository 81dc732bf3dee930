import { tracingRatio, type OtelMeasure } from './tracing-ratio';

const m = (tracing: boolean, perSec: number): OtelMeasure => ({
  tracing,
  perSec,
  p50Ms: 1,
  p99Ms: 2,
  errors: 0,
});

describe('tracingRatio', () => {
  it('is on/off of the summed runs, with each round its own ratio whatever the order (ABBA)', () => {
    const { ratio, rounds } = tracingRatio([m(false, 200), m(true, 180), m(true, 190), m(false, 200)]);
    expect(ratio).toBeCloseTo(370 / 400);
    expect(rounds).toEqual([0.9, 0.95]);
  });

  it('is not a number when nothing ran untraced', () => {
    expect(tracingRatio([m(true, 10)]).ratio).toBeNaN();
  });
});
