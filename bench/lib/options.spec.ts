import { benchOption } from './options';

describe('benchOption', () => {
  it('reads --<section>-<name>= first, else CANOPY_BENCH_<SECTION>_<NAME>, else nothing', () => {
    const env = { CANOPY_BENCH_CLUSTER_WARMUP: '50' };
    expect(benchOption(['--cluster-warmup=0'], env, 'cluster', 'warmup')).toBe('0');
    expect(benchOption(['--cluster-sessions=10'], env, 'cluster', 'warmup')).toBe('50');
    expect(benchOption([], {}, 'http', 'levels')).toBeUndefined();
    expect(benchOption(['--http-levels='], {}, 'http', 'levels')).toBe('');
  });
});
