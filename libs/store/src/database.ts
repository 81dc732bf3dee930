// The only door to the database. Every query runs inside a transaction that first declares who it acts for
// (set_config(..., true), scoped to that transaction), and Postgres row-level security lets it see that
// tenant's rows and nothing else. Repositories get a transaction client from here and never hold the
// PrismaClient itself, so a query without a tenant cannot be written by accident.

import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient, type Prisma } from './generated/prisma/client';
import { mapPrismaError } from './prisma-errors';

export type Tx = Prisma.TransactionClient;

export interface DatabaseOptions {
  url: string;
  poolMax: number;
  txMaxWaitMs: number;
  txTimeoutMs: number;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export class Database {
  private readonly prisma: PrismaClient;

  constructor(private readonly options: DatabaseOptions) {
    this.prisma = new PrismaClient({
      adapter: new PrismaPg({ connectionString: options.url, max: options.poolMax }),
      transactionOptions: { maxWait: options.txMaxWaitMs, timeout: options.txTimeoutMs },
    });
  }

  /** Runs fn in a transaction that sees only the scope's tenant. An id that is no tenant id finds nothing. */
  withTenant<T>(scope: Pick<Scope, 'tenantId'>, fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (!isUuid(scope.tenantId)) return Promise.reject(CanopyException.notFound('tenant'));
    return this.transaction('canopy.tenant_id', scope.tenantId, fn);
  }

  /**
   * Runs fn across every tenant. Only for the operations that have no tenant yet or span tenants by design
   * (admin routes, recovery sweeps); name the reason so a reader can audit each use.
   */
  withAdmin<T>(reason: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    if (!reason) return Promise.reject(new Error('withAdmin needs a reason'));
    return this.transaction('canopy.admin', 'on', fn);
  }

  /** Runs fn able to read only the API key row with this hash (authentication, before the tenant is known). */
  withKeyHash<T>(keyHash: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.transaction('canopy.key_hash', keyHash, fn);
  }

  /** Resolves when the database answers. */
  async ping(): Promise<void> {
    try {
      await this.prisma.$queryRaw`SELECT 1`;
    } catch (err) {
      throw mapPrismaError(err);
    }
  }

  async disconnect(): Promise<void> {
    await this.prisma.$disconnect();
  }

  /** Host and port of the database, never its credentials (for logs). */
  describe(): string {
    try {
      const u = new URL(this.options.url);
      return `${u.hostname}:${u.port || '5432'}${u.pathname}`;
    } catch {
      return 'postgres';
    }
  }

  private async transaction<T>(setting: string, value: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    try {
      return await this.prisma.$transaction(async (tx) => {
        await tx.$executeRaw`SELECT set_config(${setting}, ${value}, true)`;
        return fn(tx);
      });
    } catch (err) {
      throw mapPrismaError(err);
    }
  }
}
