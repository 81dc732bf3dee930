import type { Database, TableActivity } from './database';
import { TableMaintenance, upkeepNeeded } from './table-maintenance';

/**
 * Upkeep started at `intervalMs` on a database that only counts the passes (reads of the counters) and answers
 * the given tables.
 */
function startedUpkeep(intervalMs: number, tables: TableActivity[] = []) {
  const calls = { passes: 0, upkeep: [] as string[] };
  const db = {
    tableActivity: () => {
      calls.passes += 1;
      return Promise.resolve(tables);
    },
    upkeep: (kind: string, table: string) => {
      calls.upkeep.push(`${kind} ${table}`);
      return Promise.resolve();
    },
  } as unknown as Database;
  const upkeep = new TableMaintenance(db, { vacuum: false, intervalMs });
  upkeep.start();
  return { upkeep, calls };
}

const table = (over: Partial<TableActivity>): TableActivity => ({
  table: 'runs',
  liveRows: 0,
  deadRows: 0,
  modifiedSinceAnalyze: 0,
  analyzed: false,
  ...over,
});

describe('TableMaintenance', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('reads the counters every second for its first minute, then at its interval', async () => {
    const { upkeep, calls } = startedUpkeep(5_000);
    await jest.advanceTimersByTimeAsync(999);
    expect(calls.passes).toBe(0);
    await jest.advanceTimersByTimeAsync(1);
    expect(calls.passes).toBe(1);
    await jest.advanceTimersByTimeAsync(59_000);
    expect(calls.passes).toBe(60);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(calls.passes).toBe(62);
    await upkeep.stop();
    await jest.advanceTimersByTimeAsync(60_000);
    expect(calls.passes).toBe(62);
  });

  it('never reads more often than its interval when that is under a second', async () => {
    const { upkeep, calls } = startedUpkeep(250);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(calls.passes).toBe(4);
    await upkeep.stop();
  });

  it('analyzes a table grown from empty at the next pass', async () => {
    const { upkeep, calls } = startedUpkeep(5_000, [
      table({ table: 'runs', liveRows: 40, modifiedSinceAnalyze: 40 }),
      table({ table: 'nodes', liveRows: 5, modifiedSinceAnalyze: 5 }),
    ]);
    await jest.advanceTimersByTimeAsync(1_000);
    expect(calls.upkeep).toEqual(['analyze runs']); // nodes: under 10 rows changed
    await upkeep.stop();
  });

  it('decides between vacuum, analyze and nothing from the counters', () => {
    expect(upkeepNeeded(table({ liveRows: 1_000, modifiedSinceAnalyze: 99 }), false)).toBeNull();
    expect(upkeepNeeded(table({ liveRows: 1_000, modifiedSinceAnalyze: 100 }), false)).toBe('analyze');
    expect(upkeepNeeded(table({ liveRows: 1_000, deadRows: 1_000 }), true)).toBe('vacuum');
    expect(upkeepNeeded(table({ liveRows: 1_000, deadRows: 1_000 }), false)).toBeNull();
  });
});
