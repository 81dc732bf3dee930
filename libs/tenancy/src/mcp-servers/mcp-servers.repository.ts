// A tenant's MCP servers and its end users' credentials for them. Headers are sealed by the SecretBox before they
// reach the database (the tenant, the server and the user as associated data, so a value moved to another row does
// not open) and opened only to connect; reads for the API answer their names, never their values. Each change is
// audited in its transaction (without the values). The state (tools listed, last reached, last error) is written
// by whichever process talked to the server, without touching `updated_at` (which versions the settings).

import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { McpApproval, McpCredentialsView, McpServerView, McpToolInfo, Scope } from '@canopy/core';
import { CanopyException } from '@canopy/common';
import { Database, isUuid, writeAudit, type SecretBox, type SqlTx } from '@canopy/store';

export interface McpServerSettings {
  name: string;
  url: string;
  /** undefined: unchanged; null: none. */
  headers?: Record<string, string> | null;
  allowedTools?: string[] | null;
  approval?: McpApproval;
  enabled?: boolean;
  timeoutMs?: number | null;
  userCredentials?: boolean;
}

/** What a process needs to talk to a server: its settings with its headers opened. */
export interface McpServerConfig {
  id: string;
  tenantId: string;
  name: string;
  url: string;
  headers: Record<string, string>;
  allowedTools: string[] | null;
  approval: McpApproval;
  enabled: boolean;
  timeoutMs: number | null;
  userCredentials: boolean;
  /** The tools it listed when last reached (null: never). */
  tools: McpToolInfo[] | null;
  /** Versions the settings: a pooled client of older settings is not reused. */
  version: string;
}

interface Row {
  id: string;
  tenant_id: string;
  name: string;
  url: string;
  encrypted_headers: string | null;
  header_names: string[];
  allowed_tools: string[] | null;
  approval: McpApproval;
  enabled: boolean;
  timeout_ms: number | null;
  user_credentials: boolean;
  tools: McpToolInfo[] | null;
  last_reached_at: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

interface CredentialRow {
  server_id: string;
  user_id: string;
  encrypted_headers: string;
  header_names: string[];
  updated_at: Date;
}

@Injectable()
export class McpServersRepository {
  /** box: null when the deployment has no encryption key (headers then cannot be stored). */
  constructor(
    private readonly db: Database,
    private readonly box: SecretBox | null,
  ) {}

  async create(scope: Pick<Scope, 'tenantId'>, input: McpServerSettings): Promise<McpServerView> {
    const id = randomUUID();
    const sealed = this.sealHeaders(input.headers ?? null, serverContext(scope.tenantId, id));
    return this.db.withTenantSql(scope, async (tx) => {
      await this.assertNameFree(tx, scope.tenantId, input.name, null);
      const [row] = await tx.query<Row>(
        `INSERT INTO mcp_servers (id, tenant_id, name, url, encrypted_headers, header_names, allowed_tools, approval,
                                  enabled, timeout_ms, user_credentials)
         VALUES ($1::uuid, $2::uuid, $3, $4, $5, $6::text[], $7::text[], $8::jsonb, $9, $10, $11)
         RETURNING *`,
        [
          id,
          scope.tenantId,
          input.name,
          input.url,
          sealed,
          Object.keys(input.headers ?? {}),
          input.allowedTools ?? null,
          JSON.stringify(input.approval ?? 'never'),
          input.enabled ?? true,
          input.timeoutMs ?? null,
          input.userCredentials ?? false,
        ],
      );
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'mcp_server.create',
        targetType: 'mcp_server',
        targetId: id,
        after: auditView(row!),
      });
      return toView(row!);
    });
  }

  async list(scope: Pick<Scope, 'tenantId'>): Promise<McpServerView[]> {
    const rows = await this.db.withTenantSql(scope, (tx) =>
      tx.query<Row>(`SELECT * FROM mcp_servers WHERE tenant_id = $1::uuid ORDER BY name`, [scope.tenantId]),
    );
    return rows.map(toView);
  }

  async get(scope: Pick<Scope, 'tenantId'>, id: string): Promise<McpServerView> {
    return toView(await this.row(scope.tenantId, id));
  }

  async update(
    scope: Pick<Scope, 'tenantId'>,
    id: string,
    patch: Partial<McpServerSettings>,
  ): Promise<McpServerView> {
    if (!isUuid(id)) throw CanopyException.notFound('MCP server');
    const sealed =
      patch.headers === undefined
        ? undefined
        : this.sealHeaders(patch.headers, serverContext(scope.tenantId, id));
    return this.db.withTenantSql(scope, async (tx) => {
      const [before] = await tx.query<Row>(
        `SELECT * FROM mcp_servers WHERE tenant_id = $1::uuid AND id = $2::uuid FOR UPDATE`,
        [scope.tenantId, id],
      );
      if (!before) throw CanopyException.notFound('MCP server');
      if (patch.name !== undefined && patch.name !== before.name)
        await this.assertNameFree(tx, scope.tenantId, patch.name, id);
      const next = {
        name: patch.name ?? before.name,
        url: patch.url ?? before.url,
        encrypted_headers: sealed === undefined ? before.encrypted_headers : sealed,
        header_names: patch.headers === undefined ? before.header_names : Object.keys(patch.headers ?? {}),
        allowed_tools: patch.allowedTools === undefined ? before.allowed_tools : patch.allowedTools,
        approval: patch.approval ?? before.approval,
        enabled: patch.enabled ?? before.enabled,
        timeout_ms: patch.timeoutMs === undefined ? before.timeout_ms : patch.timeoutMs,
        user_credentials: patch.userCredentials ?? before.user_credentials,
      };
      // A new URL or new headers may reach another server: its state starts over.
      const reset = patch.url !== undefined || patch.headers !== undefined;
      const [row] = await tx.query<Row>(
        `UPDATE mcp_servers
            SET name = $3, url = $4, encrypted_headers = $5, header_names = $6::text[], allowed_tools = $7::text[],
                approval = $8::jsonb, enabled = $9, timeout_ms = $10, user_credentials = $11, updated_at = now(),
                tools = CASE WHEN $12 THEN NULL ELSE tools END,
                last_reached_at = CASE WHEN $12 THEN NULL ELSE last_reached_at END,
                last_error = CASE WHEN $12 THEN NULL ELSE last_error END
          WHERE tenant_id = $1::uuid AND id = $2::uuid
          RETURNING *`,
        [
          scope.tenantId,
          id,
          next.name,
          next.url,
          next.encrypted_headers,
          next.header_names,
          next.allowed_tools,
          JSON.stringify(next.approval),
          next.enabled,
          next.timeout_ms,
          next.user_credentials,
          reset,
        ],
      );
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'mcp_server.update',
        targetType: 'mcp_server',
        targetId: id,
        before: auditView(before),
        after: auditView(row!),
      });
      return toView(row!);
    });
  }

  async delete(scope: Pick<Scope, 'tenantId'>, id: string): Promise<void> {
    if (!isUuid(id)) throw CanopyException.notFound('MCP server');
    await this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<Row>(
        `DELETE FROM mcp_servers WHERE tenant_id = $1::uuid AND id = $2::uuid RETURNING *`,
        [scope.tenantId, id],
      );
      if (!row) throw CanopyException.notFound('MCP server');
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'mcp_server.delete',
        targetType: 'mcp_server',
        targetId: id,
        before: auditView(row),
      });
    });
  }

  /** Stores an end user's own headers for a server (replacing theirs). */
  async putCredentials(
    scope: Pick<Scope, 'tenantId'>,
    serverId: string,
    userId: string,
    headers: Record<string, string>,
  ): Promise<McpCredentialsView> {
    if (!isUuid(serverId)) throw CanopyException.notFound('MCP server');
    const box = this.requireBox();
    const sealed = box.seal(JSON.stringify(headers), credentialContext(scope.tenantId, serverId, userId));
    return this.db.withTenantSql(scope, async (tx) => {
      const [server] = await tx.query<{ id: string }>(
        `SELECT id FROM mcp_servers WHERE tenant_id = $1::uuid AND id = $2::uuid`,
        [scope.tenantId, serverId],
      );
      if (!server) throw CanopyException.notFound('MCP server');
      const [row] = await tx.query<CredentialRow>(
        `INSERT INTO mcp_user_credentials (tenant_id, server_id, user_id, encrypted_headers, header_names)
         VALUES ($1::uuid, $2::uuid, $3, $4, $5::text[])
         ON CONFLICT (tenant_id, server_id, user_id) DO UPDATE
           SET encrypted_headers = EXCLUDED.encrypted_headers, header_names = EXCLUDED.header_names,
               updated_at = now()
         RETURNING *`,
        [scope.tenantId, serverId, userId, sealed, Object.keys(headers)],
      );
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'mcp_credentials.put',
        targetType: 'mcp_server',
        targetId: serverId,
        after: { userId, headerNames: Object.keys(headers) },
      });
      return toCredentialsView(row!);
    });
  }

  async deleteCredentials(scope: Pick<Scope, 'tenantId'>, serverId: string, userId: string): Promise<void> {
    if (!isUuid(serverId)) throw CanopyException.notFound('MCP server');
    await this.db.withTenantSql(scope, async (tx) => {
      const [row] = await tx.query<CredentialRow>(
        `DELETE FROM mcp_user_credentials WHERE tenant_id = $1::uuid AND server_id = $2::uuid AND user_id = $3
         RETURNING *`,
        [scope.tenantId, serverId, userId],
      );
      if (!row) throw CanopyException.notFound('MCP credentials');
      await writeAudit(tx, {
        tenantId: scope.tenantId,
        action: 'mcp_credentials.delete',
        targetType: 'mcp_server',
        targetId: serverId,
        before: { userId, headerNames: row.header_names },
      });
    });
  }

  /** The names of the tenant's servers (enabled or not): what opts.mcpServers may name. */
  async names(tenantId: string): Promise<ReadonlySet<string>> {
    const rows = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<{ name: string }>(`SELECT name FROM mcp_servers WHERE tenant_id = $1::uuid`, [tenantId]),
    );
    return new Set(rows.map((r) => r.name));
  }

  /**
   * The settings of the tenant's servers named (all of them when `names` is absent), headers opened. A server whose
   * headers cannot be opened (sealed under another deployment key) is left out.
   */
  async configs(tenantId: string, names?: readonly string[]): Promise<McpServerConfig[]> {
    if (names && names.length === 0) return [];
    const rows = await this.db.withTenantSql({ tenantId }, (tx) =>
      names
        ? tx.query<Row>(`SELECT * FROM mcp_servers WHERE tenant_id = $1::uuid AND name = ANY($2::text[])`, [
            tenantId,
            names,
          ])
        : tx.query<Row>(`SELECT * FROM mcp_servers WHERE tenant_id = $1::uuid ORDER BY name`, [tenantId]),
    );
    const configs: McpServerConfig[] = [];
    for (const row of rows) {
      const headers = this.openHeaders(row.encrypted_headers, serverContext(tenantId, row.id));
      if (headers) configs.push(toConfig(row, headers));
    }
    return configs;
  }

  /** One server's settings, headers opened (not_found when it is not the tenant's or they cannot be opened). */
  async config(tenantId: string, id: string): Promise<McpServerConfig> {
    const row = await this.row(tenantId, id);
    const headers = this.openHeaders(row.encrypted_headers, serverContext(tenantId, row.id));
    if (!headers)
      throw CanopyException.unavailable(
        'the MCP server’s headers cannot be opened with this deployment’s key',
      );
    return toConfig(row, headers);
  }

  /** An end user's own headers for a server, opened; null when they have none (or they cannot be opened). */
  async userHeaders(
    tenantId: string,
    serverId: string,
    userId: string,
  ): Promise<Record<string, string> | null> {
    const [row] = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<CredentialRow>(
        `SELECT * FROM mcp_user_credentials WHERE tenant_id = $1::uuid AND server_id = $2::uuid AND user_id = $3`,
        [tenantId, serverId, userId],
      ),
    );
    if (!row) return null;
    return this.openHeaders(row.encrypted_headers, credentialContext(tenantId, serverId, userId));
  }

  /** The end user a session belongs to (null: none, or no such session). */
  async sessionUser(tenantId: string, sessionId: string): Promise<string | null> {
    const [row] = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<{ user_id: string | null }>(
        `SELECT user_id FROM sessions WHERE tenant_id = $1::uuid AND id = $2`,
        [tenantId, sessionId],
      ),
    );
    return row?.user_id ?? null;
  }

  /** What a process saw of a server: the tools it listed (when it listed them) and whether it answered. */
  async recordState(
    tenantId: string,
    id: string,
    state: { tools?: McpToolInfo[]; error: string | null },
  ): Promise<void> {
    await this.db.withTenantSql({ tenantId }, (tx) =>
      state.error === null
        ? tx.query(
            `UPDATE mcp_servers SET last_reached_at = now(), last_error = NULL,
                    tools = COALESCE($3::jsonb, tools)
              WHERE tenant_id = $1::uuid AND id = $2::uuid`,
            [tenantId, id, state.tools ? JSON.stringify(state.tools) : null],
          )
        : tx.query(`UPDATE mcp_servers SET last_error = $3 WHERE tenant_id = $1::uuid AND id = $2::uuid`, [
            tenantId,
            id,
            state.error.slice(0, 2_000),
          ]),
    );
  }

  private async row(tenantId: string, id: string): Promise<Row> {
    if (!isUuid(id)) throw CanopyException.notFound('MCP server');
    const [row] = await this.db.withTenantSql({ tenantId }, (tx) =>
      tx.query<Row>(`SELECT * FROM mcp_servers WHERE tenant_id = $1::uuid AND id = $2::uuid`, [tenantId, id]),
    );
    if (!row) throw CanopyException.notFound('MCP server');
    return row;
  }

  private async assertNameFree(tx: SqlTx, tenantId: string, name: string, except: string | null) {
    const [taken] = await tx.query<{ id: string }>(
      `SELECT id FROM mcp_servers WHERE tenant_id = $1::uuid AND name = $2 FOR UPDATE`,
      [tenantId, name],
    );
    if (taken && taken.id !== except) {
      throw new CanopyException('already_exists', `an MCP server named "${name}" exists`, { field: 'name' });
    }
  }

  private sealHeaders(headers: Record<string, string> | null, context: string): string | null {
    if (!headers || Object.keys(headers).length === 0) return null;
    return this.requireBox().seal(JSON.stringify(headers), context);
  }

  private openHeaders(sealed: string | null, context: string): Record<string, string> | null {
    if (sealed === null) return {};
    if (!this.box) return null;
    try {
      return JSON.parse(this.box.open(sealed, context)) as Record<string, string>;
    } catch {
      return null; // sealed under another deployment key: as if absent
    }
  }

  private requireBox(): SecretBox {
    if (!this.box) {
      throw CanopyException.unavailable(
        'MCP server headers need an encryption key: set CANOPY_ENCRYPTION_KEY (32 bytes, hex or base64) on every process',
      );
    }
    return this.box;
  }
}

function serverContext(tenantId: string, serverId: string): string {
  return `mcp_servers:${tenantId}:${serverId}`;
}

function credentialContext(tenantId: string, serverId: string, userId: string): string {
  return `mcp_user_credentials:${tenantId}:${serverId}:${userId}`;
}

function auditView(r: Row): Record<string, unknown> {
  return {
    name: r.name,
    url: r.url,
    headerNames: r.header_names,
    allowedTools: r.allowed_tools,
    approval: r.approval,
    enabled: r.enabled,
    timeoutMs: r.timeout_ms,
    userCredentials: r.user_credentials,
  };
}

function toView(r: Row): McpServerView {
  return {
    id: r.id,
    name: r.name,
    url: r.url,
    headerNames: r.header_names,
    allowedTools: r.allowed_tools,
    approval: r.approval,
    enabled: r.enabled,
    timeoutMs: r.timeout_ms,
    userCredentials: r.user_credentials,
    tools: r.tools,
    lastReachedAt: r.last_reached_at?.toISOString() ?? null,
    lastError: r.last_error,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

function toConfig(r: Row, headers: Record<string, string>): McpServerConfig {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    name: r.name,
    url: r.url,
    headers,
    allowedTools: r.allowed_tools,
    approval: r.approval,
    enabled: r.enabled,
    timeoutMs: r.timeout_ms,
    userCredentials: r.user_credentials,
    tools: r.tools,
    version: r.updated_at.toISOString(),
  };
}

function toCredentialsView(r: CredentialRow): McpCredentialsView {
  return {
    serverId: r.server_id,
    userId: r.user_id,
    headerNames: r.header_names,
    updatedAt: r.updated_at.toISOString(),
  };
}
