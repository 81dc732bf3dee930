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

/**
 * How long a file stored from a prompt's inline data may wait for a committed message to refer to it (its run may
 * be queued, running or paused meanwhile: those keep it whatever the wait) before the sweep releases it.
 */
const UNUSED_PROMPT_FILE = '1 hour';

export class FilesRepository {
  constructor(private readonly db: Database) {}

  /** A new file's row, `uploading` (its bytes are being stored under `storageKey`). */
  async start(
    scope: Pick<Scope, 'tenantId' | 'userId'>,
    input: { id: string; name: string; storage: 'postgres' | 's3'; storageKey: string; fromPrompt: boolean },
  ): Promise<void> {
    await this.db.withTenantSql(scope, (tx) =>
      tx.query(
        `INSERT INTO files (id, tenant_id, user_id, name, media_type, storage, storage_key, from_prompt_at)
         VALUES ($1::uuid, $2::uuid, $3, $4, 'application/octet-stream', $5, $6, CASE WHEN $7 THEN now() END)`,
        [
          input.id,
          scope.tenantId,
          scope.userId ?? null,
          input.name,
          input.storage,
          input.storageKey,
          input.fromPrompt,
        ],
      ),
    );
  }

  /**
   * The upload's bytes are stored: the file is ready, with what was measured of them. The storage quotas that apply
   * (the tenant's, and its user's for a user's upload) are checked again here, exactly: their rows are locked (in
   * the order canopy_start_run locks runs quotas: the tenant's first, day before month), so the finishing uploads
   * of a scope take turns, each counting the bytes of those finished before it. An upload that does not fit answers
   * 429 quota_exceeded and leaves its row `uploading` (the caller removes its bytes and abandons it).
   */
  async finish(
    scope: Pick<Scope, 'tenantId'>,
    id: string,
    measured: { bytes: number; sha256: string; mediaType: string },
  ): Promise<FileRecord> {
    const row = await this.db.withTenantSql(scope, async (tx) => {
      const [updated] = await tx.query<Row>(
        `UPDATE files SET status = 'ready', bytes = $3, sha256 = $4, media_type = $5
          WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING *`,
        [scope.tenantId, id, measured.bytes, measured.sha256, measured.mediaType],
      );
      if (!updated) throw CanopyException.notFound('file');
      await this.assertWithinStorageQuotas(tx, scope.tenantId, updated.user_id, measured.bytes);
      return updated;
    });
    return toRecord(row);
  }

  /** Refuses (quota_exceeded) when the scope's stored bytes, the file of `bytes` just finished included, pass a quota. */
  private async assertWithinStorageQuotas(
    tx: SqlTx,
    tenantId: string,
    userId: string | null,
    bytes: number,
  ): Promise<void> {
    const quotas = await tx.query<{ user_id: string | null; limit: number }>(
      `SELECT user_id, "limit" FROM quotas
        WHERE tenant_id = $1::uuid AND metric = 'storage' AND (user_id IS NULL OR user_id = $2)
        ORDER BY user_id NULLS FIRST, period
          FOR UPDATE`,
      [tenantId, userId],
    );
    if (quotas.length === 0) return;
    // A statement after the lock: it sees every upload finished by those that held it before.
    const [stored] = await tx.query<{ tenant_bytes: number; user_bytes: number }>(
      `SELECT coalesce(sum(bytes), 0)::float8 AS tenant_bytes,
              coalesce(sum(bytes) FILTER (WHERE user_id = $2), 0)::float8 AS user_bytes
         FROM files WHERE tenant_id = $1::uuid`,
      [tenantId, userId],
    );
    for (const q of quotas) {
      const used = Number(q.user_id === null ? stored!.tenant_bytes : stored!.user_bytes);
      if (used > Number(q.limit)) {
        const left = Math.max(0, Number(q.limit) - (used - bytes));
        throw new CanopyException('quota_exceeded', `the tenant's file storage quota leaves ${left} bytes`, {
          metric: 'storage',
          left,
        });
      }
    }
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

  /**
   * Files stored from a prompt's inline data more than UNUSED_PROMPT_FILE ago, at most `limit`, across tenants (the
   * sweep's), judged once: one a committed message of a session that refers to it names (the session's own nodes or
   * its fork base's) loses its mark and is kept like any other file; one a run or queued prompt still on its way
   * names, or a session came to refer to within that time, keeps its mark (judged again by a later sweep); any other
   * (its run failed or was cancelled before its commit, or its prompt was refused) is no longer referred to and is
   * marked deleted, so the sweep removes it. Answers how many were released.
   */
  async releaseUnusedPromptFiles(limit: number): Promise<number> {
    const [row] = await this.db.withAdminSql(
      'file sweep: files stored from prompts no message refers to',
      (tx) =>
        tx.query<{ released: number }>(
          `WITH candidates AS (
           SELECT f.tenant_id, f.id FROM files f
            WHERE f.from_prompt_at < now() - interval '${UNUSED_PROMPT_FILE}' AND f.deleted_at IS NULL
            ORDER BY f.from_prompt_at
            LIMIT $1
              FOR UPDATE SKIP LOCKED),
         referring AS (
           SELECT r.tenant_id, r.file_id, r.session_id FROM candidates c
             JOIN file_refs r ON r.tenant_id = c.tenant_id AND r.file_id = c.id
           UNION
           SELECT r.tenant_id, r.file_id, s.base_session_id FROM candidates c
             JOIN file_refs r ON r.tenant_id = c.tenant_id AND r.file_id = c.id
             JOIN sessions s ON s.tenant_id = r.tenant_id AND s.id = r.session_id
            WHERE s.base_session_id IS NOT NULL),
         judged AS (
           SELECT c.tenant_id, c.id,
                  EXISTS (SELECT 1 FROM referring x
                            JOIN nodes n ON n.tenant_id = x.tenant_id AND n.session_id = x.session_id
                           WHERE x.tenant_id = c.tenant_id AND x.file_id = c.id
                             AND strpos(n.message::text, c.id::text) > 0) AS in_message,
                  EXISTS (SELECT 1 FROM referring x
                            JOIN runs u ON u.tenant_id = x.tenant_id AND u.session_id = x.session_id
                           WHERE x.tenant_id = c.tenant_id AND x.file_id = c.id
                             AND u.status IN ('queued', 'running', 'paused')
                             AND strpos(concat(u.input::text, u.steer::text, u.pending::text), c.id::text) > 0)
                  OR EXISTS (SELECT 1 FROM referring x
                               JOIN queued_prompts q ON q.tenant_id = x.tenant_id AND q.session_id = x.session_id
                              WHERE x.tenant_id = c.tenant_id AND x.file_id = c.id
                                AND strpos(q.input::text, c.id::text) > 0)
                  OR EXISTS (SELECT 1 FROM file_refs r
                              WHERE r.tenant_id = c.tenant_id AND r.file_id = c.id
                                AND r.created_at > now() - interval '${UNUSED_PROMPT_FILE}') AS on_its_way
             FROM candidates c),
         -- Data-modifying WITH statements run to completion whether or not the query reads them.
         kept AS (
           UPDATE files f SET from_prompt_at = NULL FROM judged j
            WHERE f.tenant_id = j.tenant_id AND f.id = j.id AND j.in_message),
         unreferred AS (
           DELETE FROM file_refs r USING judged j
            WHERE r.tenant_id = j.tenant_id AND r.file_id = j.id AND NOT j.in_message AND NOT j.on_its_way),
         released AS (
           UPDATE files f SET from_prompt_at = NULL, deleted_at = now() FROM judged j
            WHERE f.tenant_id = j.tenant_id AND f.id = j.id AND NOT j.in_message AND NOT j.on_its_way
           RETURNING f.id)
         SELECT count(*)::int AS released FROM released`,
          [limit],
        ),
    );
    return row?.released ?? 0;
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
