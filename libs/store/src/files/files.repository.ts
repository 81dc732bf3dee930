// The files' rows: metadata of each upload, and which sessions refer to which files (file_refs). Tenant-scoped like
// every repository (row-level security); a user token's scope reaches only the files its user uploaded, as it
// reaches only its own sessions. A file is `uploading` until its bytes are stored, then `ready`; only ready files
// are answered. Removal is the sweep's: a file deleted by its owner, or one that sessions referred to and none does
// any longer, loses its bytes first and its row last (a failure between the two leaves a row the next sweep takes).

import type { Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { isUuid, type Database, type SqlTx } from '../database';

export interface FileRecord {
  id: string;
  tenantId: string;
  userId: string | null;
  name: string;
  mediaType: string;
  bytes: number;
  sha256: string;
  storage: 'postgres' | 's3';
  storageKey: string;
  createdAt: Date;
}

interface Row {
  id: string;
  tenant_id: string;
  user_id: string | null;
  name: string;
  media_type: string;
  bytes: string | number;
  sha256: string | null;
  storage: 'postgres' | 's3';
  storage_key: string;
  created_at: Date;
}

/** A file the sweep removes: where its bytes are. */
export interface ReleasedFile {
  tenantId: string;
  id: string;
  storageKey: string;
}

/** How long an upload may stay unfinished before the sweep takes it as abandoned (a crashed process's). */
const ABANDONED_UPLOAD = '1 hour';

export class FilesRepository {
  constructor(private readonly db: Database) {}

  /** A new file's row, `uploading` (its bytes are being stored under `storageKey`). */
  async start(
    scope: Pick<Scope, 'tenantId' | 'userId'>,
    input: { id: string; name: string; storage: 'postgres' | 's3'; storageKey: string },
  ): Promise<void> {
    await this.db.withTenantSql(scope, (tx) =>
      tx.query(
        `INSERT INTO files (id, tenant_id, user_id, name, media_type, storage, storage_key)
         VALUES ($1::uuid, $2::uuid, $3, $4, 'application/octet-stream', $5, $6)`,
        [input.id, scope.tenantId, scope.userId ?? null, input.name, input.storage, input.storageKey],
      ),
    );
  }

  /** The upload's bytes are stored: the file is ready, with what was measured of them. */
  async finish(
    scope: Pick<Scope, 'tenantId'>,
    id: string,
    measured: { bytes: number; sha256: string; mediaType: string },
  ): Promise<FileRecord> {
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(
        `UPDATE files SET status = 'ready', bytes = $3, sha256 = $4, media_type = $5
          WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING *`,
        [scope.tenantId, id, measured.bytes, measured.sha256, measured.mediaType],
      ),
    );
    if (!row) throw CanopyException.notFound('file');
    return toRecord(row);
  }

  /** An upload that failed: its row goes (its bytes were removed by the storage). */
  async abandon(scope: Pick<Scope, 'tenantId'>, id: string): Promise<void> {
    await this.db.withTenantSql(scope, (tx) =>
      tx.query(`DELETE FROM files WHERE tenant_id = $1::uuid AND id = $2::uuid AND status = 'uploading'`, [
        scope.tenantId,
        id,
      ]),
    );
  }

  /** A ready file the scope reaches (404 not_found otherwise: another tenant's, another user's, deleted). */
  async get(scope: Pick<Scope, 'tenantId' | 'userId'>, id: string): Promise<FileRecord> {
    const [found] = await this.getMany(scope, [id]);
    if (!found) throw CanopyException.notFound('file');
    return found;
  }

  /**
   * A ready file by its id alone, whatever its tenant: only for a signed URL, whose signature (checked first) names
   * the file. Null when there is none.
   */
  async bySignedId(id: string): Promise<FileRecord | null> {
    if (!isUuid(id)) return null;
    const [row] = await this.db.withAdminSql('a signed file URL names its file', (tx) =>
      tx.query<Row>(`SELECT * FROM files WHERE id = $1::uuid AND status = 'ready' AND deleted_at IS NULL`, [
        id,
      ]),
    );
    return row ? toRecord(row) : null;
  }

  /** The ready files among `ids` the scope reaches, in no particular order. */
  async getMany(scope: Pick<Scope, 'tenantId' | 'userId'>, ids: readonly string[]): Promise<FileRecord[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(
        `SELECT * FROM files
          WHERE tenant_id = $1::uuid AND id = ANY ($2::uuid[]) AND status = 'ready' AND deleted_at IS NULL
            AND ($3::text IS NULL OR user_id = $3)`,
        [scope.tenantId, valid, scope.userId ?? null],
      ),
    );
    return rows.map(toRecord);
  }

  /**
   * Files a session's messages refer to, by id, whoever uploaded them and even when deleted since (the conversation
   * still shows them until the sweep): what the model is sent and an export carries. Ready files of the tenant only.
   */
  async forSession(tenantId: string, ids: readonly string[]): Promise<FileRecord[]> {
    const valid = ids.filter(isUuid);
    if (valid.length === 0) return [];
    const rows = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<Row>(
        `SELECT * FROM files WHERE tenant_id = $1::uuid AND id = ANY ($2::uuid[]) AND status = 'ready'`,
        [tenantId, valid],
      ),
    );
    return rows.map(toRecord);
  }

  /** Files of the tenant (the scope's user's only, for a user token), newest first. */
  async list(
    scope: Pick<Scope, 'tenantId' | 'userId'>,
    page: { limit: number; before: { createdAt: Date; id: string } | null },
  ): Promise<FileRecord[]> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(
        `SELECT * FROM files
          WHERE tenant_id = $1::uuid AND status = 'ready' AND deleted_at IS NULL
            AND ($2::text IS NULL OR user_id = $2)
            AND ($3::timestamptz IS NULL OR (created_at, id) < ($3::timestamptz, $4::uuid))
          ORDER BY created_at DESC, id DESC LIMIT $5`,
        [
          scope.tenantId,
          scope.userId ?? null,
          page.before?.createdAt ?? null,
          page.before?.id ?? null,
          page.limit,
        ],
      ),
    );
    return rows.map(toRecord);
  }

  /**
   * Deleted by its owner: no longer answered; its bytes are removed by the sweep once no session refers to it
   * (the conversations that show it keep showing it until then).
   */
  async markDeleted(scope: Pick<Scope, 'tenantId' | 'userId'>, id: string): Promise<void> {
    const file = await this.get(scope, id);
    await this.db.withTenantSql(scope, (tx) =>
      tx.query(`UPDATE files SET deleted_at = now() WHERE tenant_id = $1::uuid AND id = $2::uuid`, [
        scope.tenantId,
        file.id,
      ]),
    );
  }

  /**
   * The session refers to these files (they stay while it does): how many of them it now refers to (a file deleted
   * meanwhile is not referred to).
   */
  async addRefs(tx: SqlTx, tenantId: string, sessionId: string, fileIds: readonly string[]): Promise<number> {
    if (fileIds.length === 0) return 0;
    const rows = await tx.query(
      `WITH referred AS (
         UPDATE files SET referenced_at = COALESCE(referenced_at, now())
          WHERE tenant_id = $1::uuid AND id = ANY ($3::uuid[]) AND status = 'ready' AND deleted_at IS NULL
          RETURNING id)
       INSERT INTO file_refs (tenant_id, file_id, session_id)
       SELECT $1::uuid, referred.id, $2 FROM referred
       ON CONFLICT (tenant_id, file_id, session_id) DO UPDATE SET created_at = file_refs.created_at
       RETURNING file_id`,
      [tenantId, sessionId, [...new Set(fileIds)]],
    );
    return rows.length;
  }

  /** addRefs in a transaction of its own. */
  refer(scope: Pick<Scope, 'tenantId'>, sessionId: string, fileIds: readonly string[]): Promise<number> {
    return this.db.withTenantSql(scope, (tx) => this.addRefs(tx, scope.tenantId, sessionId, fileIds));
  }

  /** The files the session refers to, ready and not deleted (an export carries them). */
  async ofSession(scope: Pick<Scope, 'tenantId'>, sessionId: string): Promise<FileRecord[]> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(
        `SELECT f.* FROM file_refs r JOIN files f ON f.tenant_id = r.tenant_id AND f.id = r.file_id
          WHERE r.tenant_id = $1::uuid AND r.session_id = $2 AND f.status = 'ready'`,
        [scope.tenantId, sessionId],
      ),
    );
    return rows.map(toRecord);
  }

  /**
   * What the storage quotas leave for an upload by the scope: the tenant's quota less its files' bytes, and its
   * user's quota (a user token's) less theirs, whichever is less; null when neither is set.
   */
  async quotaLeft(scope: Pick<Scope, 'tenantId' | 'userId'>): Promise<number | null> {
    const [row] = await this.db.withTenantSql(scope, (tx) =>
      tx.query<{
        tenant_limit: number | null;
        user_limit: number | null;
        tenant_bytes: string;
        user_bytes: string;
      }>(
        `SELECT (SELECT min("limit") FROM quotas
                  WHERE tenant_id = $1::uuid AND metric = 'storage' AND user_id IS NULL) AS tenant_limit,
                (SELECT min("limit") FROM quotas
                  WHERE tenant_id = $1::uuid AND metric = 'storage' AND user_id = $2) AS user_limit,
                (SELECT coalesce(sum(bytes), 0) FROM files WHERE tenant_id = $1::uuid) AS tenant_bytes,
                (SELECT coalesce(sum(bytes), 0) FROM files WHERE tenant_id = $1::uuid AND user_id = $2) AS user_bytes`,
        [scope.tenantId, scope.userId ?? null],
      ),
    );
    if (!row) return null;
    const left = [
      row.tenant_limit === null ? null : Number(row.tenant_limit) - Number(row.tenant_bytes),
      row.user_limit === null ? null : Number(row.user_limit) - Number(row.user_bytes),
    ].filter((v): v is number => v !== null);
    return left.length ? Math.max(0, Math.min(...left)) : null;
  }

  /** Bytes the tenant's ready and uploading files take (its storage quota counts them). */
  async storedBytes(tenantId: string): Promise<number> {
    const [row] = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<{ bytes: string | null }>(`SELECT sum(bytes) AS bytes FROM files WHERE tenant_id = $1::uuid`, [
        tenantId,
      ]),
    );
    return Number(row?.bytes ?? 0);
  }

  /**
   * Files to remove, across tenants (the sweep's): deleted or once referred to, and referred to by no session now;
   * and uploads abandoned part way. At most `limit`. Each is marked deleted in the same statement, so no prompt
   * refers to it from then on (addRefs skips deleted files).
   */
  async released(limit: number): Promise<ReleasedFile[]> {
    const rows = await this.db.withAdminSql('file sweep: files no session refers to', (tx) =>
      tx.query<{ tenant_id: string; id: string; storage_key: string }>(
        `UPDATE files SET deleted_at = COALESCE(deleted_at, now())
          WHERE (tenant_id, id) IN (
                SELECT f.tenant_id, f.id FROM files f
                 WHERE ((f.referenced_at IS NOT NULL OR f.deleted_at IS NOT NULL)
                         AND NOT EXISTS (SELECT 1 FROM file_refs r
                                          WHERE r.tenant_id = f.tenant_id AND r.file_id = f.id))
                    OR (f.status = 'uploading' AND f.created_at < now() - interval '${ABANDONED_UPLOAD}')
                 LIMIT $1
                   FOR UPDATE SKIP LOCKED)
          RETURNING tenant_id, id, storage_key`,
        [limit],
      ),
    );
    return rows.map((r) => ({ tenantId: r.tenant_id, id: r.id, storageKey: r.storage_key }));
  }

  /** The row of a released file, once its bytes are gone (unless a session referred to it meanwhile). */
  async remove(file: ReleasedFile): Promise<boolean> {
    const rows = await this.db.withTenantSql({ tenantId: file.tenantId }, (tx) =>
      tx.query(
        `DELETE FROM files f WHERE f.tenant_id = $1::uuid AND f.id = $2::uuid
            AND NOT EXISTS (SELECT 1 FROM file_refs r WHERE r.tenant_id = f.tenant_id AND r.file_id = f.id)
          RETURNING id`,
        [file.tenantId, file.id],
      ),
    );
    return rows.length > 0;
  }
}

function toRecord(row: Row): FileRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    userId: row.user_id,
    name: row.name,
    mediaType: row.media_type,
    bytes: Number(row.bytes),
    sha256: row.sha256 ?? '',
    storage: row.storage,
    storageKey: row.storage_key,
    createdAt: row.created_at,
  };
}
