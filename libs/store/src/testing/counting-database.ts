// Test support for the store's integration tests (not exported by the package): a Database that counts what
// a store method sends.

import type { Scope } from '@canopy/core';
import type { Lane } from '../connection-lanes';
import { Database, type SqlTx } from '../database';

/**
 * Counts the SQL statements a store method sends (BEGIN, the transaction's settings and COMMIT excluded), and the
 * round trips: a transaction's statements plus its BEGIN and COMMIT, or one for a statement sent in autocommit.
 */
export class CountingDatabase extends Database {
  statements = 0;
  roundTrips = 0;

  override callSql<R>(
    scope: Pick<Scope, 'tenantId'>,
    text: string,
    params: unknown[],
    lane?: Lane,
  ): Promise<R[]> {
    this.statements++;
    this.roundTrips++;
    return super.callSql<R>(scope, text, params, lane);
  }

  override withTenantSql<T>(scope: Pick<Scope, 'tenantId'>, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    this.roundTrips += 2;
    return super.withTenantSql(scope, (tx) => fn(this.counting(tx)));
  }

  override withAdminSql<T>(reason: string, fn: (tx: SqlTx) => Promise<T>): Promise<T> {
    this.roundTrips += 2;
    return super.withAdminSql(reason, (tx) => fn(this.counting(tx)));
  }

  private counting(tx: SqlTx): SqlTx {
    return {
      query: <R>(text: string, params?: unknown[]) => {
        this.statements++;
        this.roundTrips++;
        return tx.query<R>(text, params);
      },
    };
  }
}
