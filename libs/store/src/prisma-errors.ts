// The one place database errors become API errors, whichever road the query took: Prisma's codes (P2002 ->
// already_exists, P2025 -> not_found) and node-postgres' SQLSTATEs (23505 -> already_exists, 23503 and 22P02 ->
// not_found), and every way of losing the database (refused or dropped connections, server shutting down, pool
// or transaction deadline) -> unavailable. Anything unrecognised is left as is and answers 500.

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
/**
 * SQLSTATEs that mean the database (not the statement) failed: admin/crash shutdown, cannot connect now, too many
 * connections, and the transaction deadline (statement_timeout cancels with 57014, the idle-in-transaction
 * timeout ends the session with 25P03, and the lock_timeout of the one-statement canopy_* functions with 55P03)
 * — the pg counterpart of Prisma's P2028, which was unavailable too. Class 08 (connection exceptions) is matched
 * by prefix.
 */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '57014', '25P03', '55P03']);
/** What node-postgres and its pool say when a connection cannot be had or is lost. */
const CONNECTION_LOST =
  /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|is not queryable/;

/** Maps a Prisma or node-postgres error to a CanopyException where one applies; anything else is returned as is. */
export function mapDbError(err: unknown): unknown {
  if (err instanceof CanopyException) return err;
  const e = err as {
    code?: unknown;
    severity?: unknown;
    meta?: Record<string, unknown>;
    message?: string;
    cause?: unknown;
  } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  switch (code) {
    case 'P2002':
      return alreadyExists(err);
    case 'P2025':
    case 'P2003':
      return notFound(err);
  }
  // A Postgres error as node-postgres reports it: a SQLSTATE and a severity.
  if (code && typeof e?.severity === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    switch (code) {
      case '23505': // unique_violation
        return alreadyExists(err);
      case '23503': // foreign_key_violation: what it points at is not there
      case '22P02': // invalid_text_representation, e.g. an id that is no uuid: nothing can have it
        return notFound(err);
    }
    if (isUnavailableSqlstate(code)) {
      return CanopyException.unavailable('the database is unavailable', err);
    }
    return err;
  }
  if ((code && UNAVAILABLE_CODES.has(code)) || isNetworkError(err) || adapterSaysUnavailable(err)) {
    return CanopyException.unavailable('the database is unavailable', err);
  }
  return err;
}

function isUnavailableSqlstate(sqlstate: string | undefined): boolean {
  return sqlstate !== undefined && (sqlstate.startsWith('08') || UNAVAILABLE_SQLSTATES.has(sqlstate));
}

/** Driver adapter error kinds that mean the database, not the query, failed. */
const UNAVAILABLE_ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
]);

/**
 * A Prisma driver adapter error under `err`: raised as it is (a DriverAdapterError, e.g. when a transaction cannot
 * start) or wrapped by Prisma (P2039 "Database error", P2010 for raw queries, the adapter's error in
 * `meta.driverAdapterError`). Its `cause` names a kind, and for a Postgres error the SQLSTATE (`originalCode`, e.g.
 * 57P01 when a restart drops the connection mid-query).
 */
function adapterSaysUnavailable(err: unknown): boolean {
  const e = err as {
    name?: unknown;
    cause?: unknown;
    meta?: { driverAdapterError?: { cause?: unknown } };
  } | null;
  const cause = (e?.name === 'DriverAdapterError' ? e.cause : e?.meta?.driverAdapterError?.cause) as
    { kind?: unknown; originalCode?: unknown } | undefined;
  if (!cause) return false;
  if (typeof cause.kind === 'string' && UNAVAILABLE_ADAPTER_KINDS.has(cause.kind)) return true;
  return typeof cause.originalCode === 'string' && isUnavailableSqlstate(cause.originalCode);
}

/** A raw-SQL transaction that ran past its deadline (Prisma's P2028 on the other road). */
export function transactionTimeout(timeoutMs: number): CanopyException {
  return CanopyException.unavailable(`the database transaction ran past its ${timeoutMs} ms deadline`);
}

function alreadyExists(cause: unknown): CanopyException {
  return new CanopyException('already_exists', 'a record with this id already exists', undefined, { cause });
}

function notFound(cause: unknown): CanopyException {
  return new CanopyException('not_found', 'record not found', undefined, { cause });
}

function isNetworkError(err: unknown, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  const { code, cause, message } = err as { code?: unknown; cause?: unknown; message?: unknown };
  if (typeof code === 'string' && NETWORK_ERRNOS.has(code)) return true;
  if (typeof message === 'string' && CONNECTION_LOST.test(message)) return true;
  return isNetworkError(cause, depth + 1);
}
