import { CanopyException } from '@canopy/common';
import { DEFAULT_USAGE_DAYS, MAX_USAGE_DAYS, usageWindow } from './usage-window';

const DAY = 86_400_000;
const now = new Date('2026-03-15T12:00:00.000Z');

function refusal(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    if (err instanceof CanopyException) return { code: err.code, message: err.message, details: err.details };
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('usageWindow', () => {
  it('defaults to the last 30 days up to now', () => {
    const { from, to } = usageWindow({}, now);
    expect(to).toEqual(now);
    expect(to.getTime() - from.getTime()).toBe(DEFAULT_USAGE_DAYS * DAY);
  });

  it('counts 30 days back from an explicit end, and takes an explicit start as is', () => {
    expect(usageWindow({ to: '2026-01-31T00:00:00.000Z' }, now).from.toISOString()).toBe(
      '2026-01-01T00:00:00.000Z',
    );
    expect(usageWindow({ from: '2026-03-01T00:00:00.000Z' }, now)).toEqual({
      from: new Date('2026-03-01T00:00:00.000Z'),
      to: now,
    });
  });

  it('refuses a start that is not before the end (400 on from)', () => {
    const at = '2026-03-01T00:00:00.000Z';
    expect(refusal(() => usageWindow({ from: at, to: at }, now))).toMatchObject({
      code: 'bad_request',
      message: 'from must be before to',
      details: { field: 'from' },
    });
  });

  it('takes at most 400 days at once', () => {
    const to = new Date('2026-03-01T00:00:00.000Z');
    const longest = new Date(to.getTime() - MAX_USAGE_DAYS * DAY).toISOString();
    expect(usageWindow({ from: longest, to: to.toISOString() }, now).from.toISOString()).toBe(longest);
    const tooLong = new Date(to.getTime() - MAX_USAGE_DAYS * DAY - 1).toISOString();
    expect(refusal(() => usageWindow({ from: tooLong, to: to.toISOString() }, now))).toMatchObject({
      code: 'bad_request',
      message: 'at most 400 days at once',
      details: { field: 'from' },
    });
  });
});
