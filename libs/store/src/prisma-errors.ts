// The one place Prisma's and the driver's errors become API errors (P2002 -> already_exists, P2025 ->
// not_found, connectivity -> unavailable). Anything unrecognised is left as is and answers 500.

import { CanopyException } from '@canopy/common';

const UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
const NETWORK_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
]);

export function mapPrismaError(err: unknown): unknown {
  if (err instanceof CanopyException) return err;
  const e = err as {
    code?: unknown;
    meta?: Record<string, unknown>;
    message?: string;
    cause?: unknown;
  } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  switch (code) {
    case 'P2002':
      return new CanopyException('already_exists', 'a record with this id already exists', undefined, {
        cause: err,
      });
    case 'P2025':
    case 'P2003':
      return new CanopyException('not_found', 'record not found', undefined, { cause: err });
  }
  if ((code && UNAVAILABLE_CODES.has(code)) || isNetworkError(err)) {
    return CanopyException.unavailable('the database is unavailable', err);
  }
  return err;
}

function isNetworkError(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const { code, cause, message } = err as { code?: unknown; cause?: unknown; message?: unknown };
  if (typeof code === 'string' && NETWORK_ERRNOS.has(code)) return true;
  if (typeof message === 'string' && /Connection terminated|connect ECONNREFUSED/.test(message)) return true;
  return isNetworkError(cause, depth + 1);
}
