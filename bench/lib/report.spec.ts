import { judge, notJudged, percent, ratio, verdictRows, verdictWord } from './report';

describe('verdicts', () => {
  const spread = 'p50/p99 1/2 ms';

  it('passes a maximum at or under its limit and a minimum at or over it', () => {
    const max = (value: number) => judge('s', 't', { value, limit: 2, kind: 'max', format: ratio, spread });
    const min = (value: number) =>
      judge('s', 't', { value, limit: 0.8, kind: 'min', format: percent, spread });
    expect(max(2)).toEqual({ section: 's', target: 't', measured: '2.00x', spread, pass: true });
    expect(max(2.01).pass).toBe(false);
    expect(min(0.8).pass).toBe(true);
    expect(min(0.79)).toMatchObject({ measured: '79%', pass: false });
  });

  it('does not judge a figure that was not measured', () => {
    expect(judge('s', 't', { value: Number.NaN, limit: 2, kind: 'max', format: ratio, spread })).toEqual({
      section: 's',
      target: 't',
      measured: 'not measured',
      spread,
      pass: null,
    });
    expect(notJudged('s', 't', 'no relay run').pass).toBeNull();
    expect([true, false, null].map(verdictWord)).toEqual(['pass', 'FAIL', 'not judged']);
  });

  it('names each section once in the table', () => {
    const rows = verdictRows([
      { section: 'a', target: 't1', measured: '1', spread: '-', pass: true },
      { section: 'a', target: 't2', measured: '2', spread: '-', pass: false },
      { section: 'b', target: 't3', measured: '3', spread: '-', pass: null },
    ]);
    expect(rows).toEqual([
      ['a', 't1', '1', '-', 'pass'],
      ['', 't2', '2', '-', 'FAIL'],
      ['b', 't3', '3', '-', 'not judged'],
    ]);
  });
});
