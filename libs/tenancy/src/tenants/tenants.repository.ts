// Tenants and their API keys. Creating a tenant acts as that (new) tenant, so row-level security needs no
// exception; listing the tenants and revoking a key by id (the admin's) are the operations that span tenants.
// Every change writes its audit events in its own transaction; an update of a tenant (its name, its state and its
// retention policy) is one transaction whatever it changes. Tenant names are unique case-insensitively (the
// unique index on lower(name)): a taken name answers tenant_name_taken. Row-level security hides the other tenants
// from the transaction that creates or renames one, so the index, which sees them all, is what decides.

import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { Database, isUuid, writeAuditPrisma } from '@canopy/store';
import { retentionKeep, type RetentionPolicy } from '../retention/retention.repository';
import { generateApiKey } from './api-keys';

export interface TenantRecord {
  id: string;
  name: string;
  createdAt: Date;
  disabledAt: Date | null;
}

/** A tenant as the admin reads it: its state and its retention policy. */
export interface TenantView extends TenantRecord {
  retention: RetentionPolicy;
}

/** What an update of a tenant changes (what is absent stays as it is). */
export interface TenantUpdate {
  name?: string;
  disabled?: boolean;
  retention?: RetentionPolicy;
}

export interface KeyRecord {
  id: string;
  tenantId: string;
  revoked: boolean;
  expiresAt: Date | null;
}

export interface KeyView {
  id: string;
  name: string | null;
  prefix: string;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
  expiresAt: Date | null;
}

/** A key as created: the key itself is in it this once. */
export interface CreatedKey {
  id: string;
  apiKey: string;
  prefix: string;
  name: string | null;
  expiresAt: Date | null;
}

export interface TenantPage {
  data: TenantRecord[];
  nextCursor: string | null;
}

const KEY_SELECT = {
  id: true,
  name: true,
  prefix: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
  expiresAt: true,
} as const;

const TENANT_SELECT = { id: true, name: true, createdAt: true, disabledAt: true } as const;
const TENANT_VIEW_SELECT = { ...TENANT_SELECT, retentionDeleteAfterDays: true, retentionKeep: true } as const;

@Injectable()
export class TenantsRepository {
  constructor(private readonly db: Database) {}

  async createTenant(name: string): Promise<{ tenant: TenantRecord; apiKey: string; keyId: string }> {
    const id = randomUUID();
    const key = generateApiKey();
    return this.db
      .withTenant({ tenantId: id }, async (tx) => {
        const tenant = await tx.tenant.create({ data: { id, name }, select: TENANT_SELECT });
        const created = await tx.apiKey.create({
          data: { tenantId: id, name: 'default', prefix: key.prefix, keyHash: key.hash },
        });
        await writeAuditPrisma(tx, {
          tenantId: id,
          action: 'tenant.create',
          targetType: 'tenant',
          targetId: id,
          after: { name },
        });
        await writeAuditPrisma(tx, {
          tenantId: id,
          action: 'key.create',
          targetType: 'key',
          targetId: created.id,
          after: { name: 'default', prefix: key.prefix },
        });
        return { tenant, apiKey: key.key, keyId: created.id };
      })
      .catch(nameTaken(name));
  }

  /** A new key for an existing tenant (not_found for an unknown one). */
  async createKey(
    tenantId: string,
    input: { name: string | null; expiresAt: Date | null },
  ): Promise<CreatedKey> {
    const key = generateApiKey();
    return this.db.withTenant({ tenantId }, async (tx) => {
      if (!(await tx.tenant.findUnique({ where: { id: tenantId }, select: { id: true } }))) {
        throw CanopyException.notFound('tenant');
      }
      const created = await tx.apiKey.create({
        data: {
          tenantId,
          name: input.name,
          prefix: key.prefix,
          keyHash: key.hash,
          expiresAt: input.expiresAt,
        },
      });
      await writeAuditPrisma(tx, {
        tenantId,
        action: 'key.create',
        targetType: 'key',
        targetId: created.id,
        after: { name: input.name, prefix: key.prefix, expiresAt: input.expiresAt?.toISOString() ?? null },
      });
      return {
        id: created.id,
        apiKey: key.key,
        prefix: key.prefix,
        name: input.name,
        expiresAt: input.expiresAt,
      };
    });
  }

  /**
   * Tenants by name, `limit` at a time after `cursor` (the previous page's nextCursor); `q` keeps those whose name
   * contains it, case-insensitively.
   */
  async listTenants(input: { limit: number; q?: string; cursor?: string }): Promise<TenantPage> {
    const after = input.cursor === undefined ? null : decodeCursor(input.cursor);
    return this.db.withAdmin('list tenants by name (admin route)', async (tx) => {
      const rows = await tx.tenant.findMany({
        select: TENANT_SELECT,
        where: {
          ...(input.q ? { name: { contains: input.q, mode: 'insensitive' as const } } : {}),
          ...(after
            ? { OR: [{ name: { gt: after.name } }, { name: after.name, id: { gt: after.id } }] }
            : {}),
        },
        orderBy: [{ name: 'asc' }, { id: 'asc' }],
        take: input.limit + 1,
      });
      const more = rows.length > input.limit;
      const data = more ? rows.slice(0, input.limit) : rows;
      const last = data[data.length - 1];
      return { data, nextCursor: more && last ? encodeCursor(last.name, last.id) : null };
    });
  }

  /** One tenant (null for an unknown one). */
  async getTenant(tenantId: string): Promise<TenantRecord | null> {
    if (!isUuid(tenantId)) return null;
    return this.db.withTenant({ tenantId }, (tx) =>
      tx.tenant.findUnique({ where: { id: tenantId }, select: TENANT_SELECT }),
    );
  }

  /** One tenant with its retention policy (null for an unknown one). */
  async detail(tenantId: string): Promise<TenantView | null> {
    if (!isUuid(tenantId)) return null;
    const row = await this.db.withTenant({ tenantId }, (tx) =>
      tx.tenant.findUnique({ where: { id: tenantId }, select: TENANT_VIEW_SELECT }),
    );
    return row ? toTenantView(row) : null;
  }

  /**
   * Renames, disables (enables) and sets the retention policy of a tenant, in one transaction with the audit event
   * of each change; answers the tenant as it is then. not_found for an unknown one, tenant_name_taken (nothing
   * changed) for a name another tenant has.
   */
  async update(tenantId: string, input: TenantUpdate): Promise<TenantView> {
    if (!isUuid(tenantId)) throw CanopyException.notFound('tenant');
    return this.db
      .withTenant({ tenantId }, async (tx) => {
        const row = await tx.tenant.findUnique({ where: { id: tenantId }, select: TENANT_VIEW_SELECT });
        if (!row) throw CanopyException.notFound('tenant');
        const before = toTenantView(row);
        if (input.name === undefined && input.disabled === undefined && input.retention === undefined)
          return before;
        const disabledAt =
          input.disabled === undefined
            ? before.disabledAt
            : input.disabled
              ? (before.disabledAt ?? new Date())
              : null;
        const after = toTenantView(
          await tx.tenant.update({
            where: { id: tenantId },
            data: {
              ...(input.name !== undefined ? { name: input.name } : {}),
              disabledAt,
              ...(input.retention
                ? {
                    retentionDeleteAfterDays: input.retention.deleteAfterDays,
                    retentionKeep: input.retention.keep,
                  }
                : {}),
            },
            select: TENANT_VIEW_SELECT,
          }),
        );
        if (input.name !== undefined && input.name !== before.name) {
          await writeAuditPrisma(tx, {
            tenantId,
            action: 'tenant.rename',
            targetType: 'tenant',
            targetId: tenantId,
            before: { name: before.name },
            after: { name: after.name },
          });
        }
        if ((before.disabledAt === null) !== (after.disabledAt === null)) {
          await writeAuditPrisma(tx, {
            tenantId,
            action: after.disabledAt ? 'tenant.disable' : 'tenant.enable',
            targetType: 'tenant',
            targetId: tenantId,
            before: { disabled: before.disabledAt !== null },
            after: { disabled: after.disabledAt !== null },
          });
        }
        if (input.retention) {
          await writeAuditPrisma(tx, {
            tenantId,
            action: 'tenant.retention',
            targetType: 'tenant',
            targetId: tenantId,
            before: { ...before.retention },
            after: { ...input.retention },
          });
        }
        return after;
      })
      .catch(nameTaken(input.name));
  }

  /** Whether the tenant's key with this id is revoked (or gone): a user token minted with it is no longer valid. */
  async isKeyRevoked(tenantId: string, keyId: string): Promise<boolean> {
    if (!isUuid(keyId) || !isUuid(tenantId)) return true;
    return this.db.withTenant({ tenantId }, async (tx) => {
      const key = await tx.apiKey.findFirst({ where: { id: keyId }, select: { revokedAt: true } });
      return !key || key.revokedAt !== null;
    });
  }

  /** Whether the tenant is disabled (false for an unknown one: its credentials fail elsewhere). */
  async isDisabled(tenantId: string): Promise<boolean> {
    const tenant = await this.getTenant(tenantId);
    return tenant?.disabledAt != null;
  }

  /** A tenant's keys, newest first (never the key itself: its prefix). */
  async listKeys(tenantId: string): Promise<KeyView[]> {
    if (!isUuid(tenantId)) throw CanopyException.notFound('tenant');
    return this.db.withTenant({ tenantId }, async (tx) => {
      if (!(await tx.tenant.findUnique({ where: { id: tenantId }, select: { id: true } }))) {
        throw CanopyException.notFound('tenant');
      }
      return tx.apiKey.findMany({
        where: { tenantId },
        select: KEY_SELECT,
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      });
    });
  }

  /**
   * Revokes a key (idempotent); null when no such key exists — in `tenantId`'s keys when given (a tenant revoking
   * its own), in any tenant's otherwise (the admin).
   */
  async revokeKey(keyId: string, tenantId?: string): Promise<KeyRecord | null> {
    if (!isUuid(keyId)) return null;
    const revoke = async (tx: Parameters<Parameters<Database['withAdmin']>[1]>[0]) => {
      const key = await tx.apiKey.findUnique({ where: { id: keyId } });
      if (!key || (tenantId !== undefined && key.tenantId !== tenantId)) return null;
      if (!key.revokedAt) {
        await tx.apiKey.update({ where: { id: keyId }, data: { revokedAt: new Date() } });
        await writeAuditPrisma(tx, {
          tenantId: key.tenantId,
          action: 'key.revoke',
          targetType: 'key',
          targetId: key.id,
          before: { name: key.name, prefix: key.prefix },
        });
      }
      return { id: key.id, tenantId: key.tenantId, revoked: true, expiresAt: key.expiresAt };
    };
    return tenantId === undefined
      ? this.db.withAdmin('revoke an API key by id (admin route)', revoke)
      : this.db.withTenant({ tenantId }, revoke);
  }

  /** The key with this hash (authentication: the only row this lookup can see). */
  async findKeyByHash(hash: string): Promise<KeyRecord | null> {
    return this.db.withKeyHash(hash, async (tx) => {
      const key = await tx.apiKey.findUnique({ where: { keyHash: hash } });
      return key
        ? { id: key.id, tenantId: key.tenantId, revoked: key.revokedAt !== null, expiresAt: key.expiresAt }
        : null;
    });
  }

  /** Records that a key was used (at most once a minute per key). */
  async touchKey(tenantId: string, keyId: string): Promise<void> {
    const now = new Date();
    await this.db.withTenant({ tenantId }, (tx) =>
      tx.apiKey.updateMany({
        where: {
          id: keyId,
          OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now.getTime() - 60_000) } }],
        },
        data: { lastUsedAt: now },
      }),
    );
  }
}

function toTenantView(row: {
  id: string;
  name: string;
  createdAt: Date;
  disabledAt: Date | null;
  retentionDeleteAfterDays: number | null;
  retentionKeep: string;
}): TenantView {
  return {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt,
    disabledAt: row.disabledAt,
    retention: { deleteAfterDays: row.retentionDeleteAfterDays, keep: retentionKeep(row.retentionKeep) },
  };
}

/** The index that keeps tenant names unique (see its migration). */
const NAME_INDEX = 'tenants_name_lower_key';

/** Rethrows a violation of the tenant name's unique index as tenant_name_taken; anything else as is. */
function nameTaken(name: string | undefined): (err: unknown) => never {
  return (err) => {
    if (err instanceof CanopyException && err.code === 'already_exists' && mentions(err.cause, NAME_INDEX)) {
      throw new CanopyException('tenant_name_taken', `a tenant named "${name}" already exists`, {
        field: 'name',
      });
    }
    throw err;
  };
}

/**
 * Whether an error names this constraint in any of its properties, causes and details (Prisma's P2002 and
 * node-postgres' 23505 carry it in different places; own names, as an Error's cause is not enumerable).
 */
function mentions(err: unknown, constraint: string, depth = 0): boolean {
  if (!err || typeof err !== 'object' || depth > 4) return false;
  return Object.getOwnPropertyNames(err).some((key) => {
    const value = (err as Record<string, unknown>)[key];
    return typeof value === 'string' ? value.includes(constraint) : mentions(value, constraint, depth + 1);
  });
}

function encodeCursor(name: string, id: string): string {
  return Buffer.from(JSON.stringify([name, id]), 'utf8').toString('base64url');
}

function decodeCursor(cursor: string): { name: string; id: string } {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(parsed) &&
      typeof parsed[0] === 'string' &&
      typeof parsed[1] === 'string' &&
      isUuid(parsed[1])
    )
      return { name: parsed[0], id: parsed[1] };
  } catch {
    // falls through
  }
  throw CanopyException.badRequest('invalid cursor', { field: 'cursor' });
}
