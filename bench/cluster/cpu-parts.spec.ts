import { cpuPerEventByPart, describeCpuByPart } from './cpu-parts';

describe('cpuPerEventByPart', () => {
  it("splits the deployment's CPU per event by the parts' shares of its CPU, leaving out the bench and others", () => {
    const parts = cpuPerEventByPart(
      {
        'worker-1': 30,
        'worker-2': 30,
        'api-1': 20,
        'api-2': 20,
        redis: 10,
        postgres: 40,
        bench: 18,
        other: 12,
      },
      0.15,
    );
    // 150 % of a core in the deployment: workers 60/150, apis 40/150, Redis 10/150, Postgres 40/150 of 0.15 ms.
    expect(parts.workers).toBeCloseTo(0.06, 10);
    expect(parts.apis).toBeCloseTo(0.04, 10);
    expect(parts.redis).toBeCloseTo(0.01, 10);
    expect(parts.postgres).toBeCloseTo(0.04, 10);
  });

  it('answers zeros for a deployment that used no CPU, and none for a part with no process', () => {
    expect(cpuPerEventByPart({ bench: 50 }, 0)).toEqual({ workers: 0, apis: 0, redis: 0, postgres: 0 });
    expect(cpuPerEventByPart({ 'worker-1': 50, redis: 50 }, 0.02)).toEqual({
      workers: 0.01,
      apis: 0,
      redis: 0.01,
      postgres: 0,
    });
  });
});

describe('describeCpuByPart', () => {
  it("gives each part in µs and weighs Postgres against the baseline's whole deployment", () => {
    const line = describeCpuByPart(
      { workers: 0.048, apis: 0.036, redis: 0.009, postgres: 0.033 },
      { workers: 0.012, apis: 0.016, redis: 0.008, postgres: 0 },
    );
    expect(line).toBe(
      'canopy workers 48.0, apis 36.0, redis 9.0, postgres 33.0 (126.0); baseline workers 12.0, apis 16.0, ' +
        "redis 8.0 (36.0). Postgres alone is 0.92x the baseline's whole deployment; Canopy without it 2.58x",
    );
  });
});
