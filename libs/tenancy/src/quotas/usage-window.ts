// The window a usage report covers: [from, to), by default the last 30 days up to now, at most 400 days.

import { CanopyException } from '@canopy/common';

const DAY_MS = 86_400_000;
export const DEFAULT_USAGE_DAYS = 30;
export const MAX_USAGE_DAYS = 400;

/** The window asked for (ISO dates, either or both absent), checked: from before to, at most MAX_USAGE_DAYS. */
export function usageWindow(
  asked: { from?: string; to?: string },
  now = new Date(),
): { from: Date; to: Date } {
  const to = asked.to ? new Date(asked.to) : now;
  const from = asked.from ? new Date(asked.from) : new Date(to.getTime() - DEFAULT_USAGE_DAYS * DAY_MS);
  if (from.getTime() >= to.getTime())
    throw CanopyException.badRequest('from must be before to', { field: 'from' });
  if (to.getTime() - from.getTime() > MAX_USAGE_DAYS * DAY_MS)
    throw CanopyException.badRequest(`at most ${MAX_USAGE_DAYS} days at once`, { field: 'from' });
  return { from, to };
}
