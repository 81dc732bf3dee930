// mapDbError: both roads' errors become the same API errors, and anything else is left alone.

import { CanopyException } from '@canopy/common';
import { mapDbError } from './prisma-errors';

/** A Postgres error as node-postgres reports it (a DatabaseError: SQLSTATE and severity). */
const pgError = (code: string, severity = 'ERROR') =>
  Object.assign(new Error(`postgres says ${code}`), { code, severity });

const codeOf = (err: unknown) => (err instanceof CanopyException ? err.code : 'unmapped');

describe('mapDbError', () => {
  it.each([
    ['23505', 'already_exists'],
    ['23503', 'not_found'],
    ['22P02', 'not_found'],
    ['08006', 'unavailable'],
    ['08001', 'unavailable'],
    ['57P01', 'unavailable'],
    ['57P02', 'unavailable'],
    ['57P03', 'unavailable'],
    ['53300', 'unavailable'],
    ['57014', 'unavailable'],
    ['25P03', 'unavailable'],
    ['55P03', 'unavailable'],
    ['42501', 'unmapped'],
    ['23514', 'unmapped'],
    ['40001', 'unmapped'],
  ])('maps SQLSTATE %s to %s', (sqlstate, expected) => {
    const err = pgError(sqlstate);
    const mapped = mapDbError(err);
    expect(codeOf(mapped)).toBe(expected);
    if (expected === 'unmapped') expect(mapped).toBe(err);
    else expect((mapped as Error).cause).toBe(err);
  });

  it.each([
    ['P2002', 'already_exists'],
    ['P2025', 'not_found'],
    ['P2003', 'not_found'],
    ['P2028', 'unavailable'],
    ['P1001', 'unavailable'],
  ])('maps Prisma %s to %s', (code, expected) => {
    expect(codeOf(mapDbError(Object.assign(new Error('prisma'), { code })))).toBe(expected);
  });

  it.each([
    ['P2039', '57P01', 'unavailable'],
    ['P2039', '57P03', 'unavailable'],
    ['P2010', '08006', 'unavailable'],
    ['P2039', '42501', 'unmapped'],
  ])('maps Prisma %s over a driver adapter SQLSTATE %s to %s', (code, sqlstate, expected) => {
    // As Prisma raises a Postgres error of its driver adapter (a restart dropping the connection mid-query).
    const err = Object.assign(new Error(`Database error. Code: \`${sqlstate}\``), {
      code,
      meta: {
        driverAdapterError: Object.assign(new Error('DriverAdapterError'), {
          cause: { kind: 'postgres', originalCode: sqlstate, originalMessage: 'terminating connection' },
        }),
      },
    });
    expect(codeOf(mapDbError(err))).toBe(expected);
  });

  it.each([
    [{ kind: 'postgres', code: '57P01', originalCode: '57P01' }, 'unavailable'],
    [{ kind: 'ConnectionClosed' }, 'unavailable'],
    [{ kind: 'DatabaseNotReachable' }, 'unavailable'],
    [{ kind: 'postgres', code: '42P01', originalCode: '42P01' }, 'unmapped'],
  ])('maps a driver adapter error raised as it is (%j) to %s', (cause, expected) => {
    // What a Prisma transaction that cannot start throws: the adapter's own error.
    const err = Object.assign(new Error('DriverAdapterError'), { name: 'DriverAdapterError', cause });
    expect(codeOf(mapDbError(err))).toBe(expected);
  });

  it.each([
    Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), {
      code: 'ECONNREFUSED',
      syscall: 'connect',
    }),
    new Error('timeout exceeded when trying to connect'),
    new Error('Connection terminated due to connection timeout'),
    new Error('Connection terminated unexpectedly'),
    new Error('Client has encountered a connection error and is not queryable'),
    new Error('wrapped', { cause: Object.assign(new Error('reset'), { code: 'ECONNRESET' }) }),
  ])('maps a lost or refused connection to unavailable: %s', (err) => {
    expect(codeOf(mapDbError(err))).toBe('unavailable');
  });

  it('leaves CanopyExceptions and unknown errors as they are', () => {
    const canopy = CanopyException.notFound('session');
    expect(mapDbError(canopy)).toBe(canopy);
    const plain = new Error('boom');
    expect(mapDbError(plain)).toBe(plain);
    // A SQLSTATE-looking code without a severity did not come from Postgres: left alone.
    const odd = Object.assign(new Error('odd'), { code: '23505' });
    expect(mapDbError(odd)).toBe(odd);
  });
});
