// The Canopy client: admin, tokens, sessions, runs, the live registry and the activity feed of one deployment,
// for a backend (Node 18+) or a browser (fetch).

import type {
  ActivityEvent,
  ActivityEventType,
  CreatedShareView,
  FeedbackRating,
  FeedbackView,
  McpServerView,
  SharedConversationView,
  ShareView,
  ModelInfo,
  ModelStatsView,
  ServerToolInfo,
  TenantInfo,
} from '@canopy/core';

import { Catalog, filterQuery } from './catalog';
import type { RetentionPolicy, TenantDetail } from './catalog-types';
import type {
  ApiKeyInfo,
  AuditEvent,
  AuditQuery,
  CreatedApiKey,
  ProviderKey,
  ProviderName,
  QuotaInput,
  Quotas,
  TenantPage,
  UsageQuery,
  UsageReport,
  Webhook,
  WebhookDelivery,
  WebhookInput,
} from './saas-types';
import { Http, type HttpOptions } from './http';
import { LiveSocket, type LiveSocketOptions } from './live-socket';
import { Session } from './session';
import { credentialEnd, sseStream } from './sse';
import type {
  ApiKey,
  CreateSessionInput,
  ListSessionsQuery,
  LiveEntry,
  Page,
  RunInfo,
  RunStats,
  Tenant,
  UserToken,
} from './types';
import type { FileUrlView, FileView, SessionInfo } from '@canopy/core';

export type CanopyOptions = HttpOptions;

export class Canopy {
  private readonly http: Http;
  private readonly catalog: Catalog;

  constructor(options: CanopyOptions) {
    this.http = new Http(options);
    this.catalog = new Catalog(this.http);
  }

  get baseUrl(): string {
    return this.http.baseUrl;
  }

  /** Admin key only: tenants and their API keys. */
  readonly admin = {
    createTenant: (name: string): Promise<Tenant> =>
      this.http.request('POST', '/v1/admin/tenants', { body: { name } }),
    /** Every tenant by name (at most `limit`, default 100, up to 1000). */
    listTenants: async (limit?: number): Promise<TenantInfo[]> =>
      (await this.http.request<{ data: TenantInfo[] }>('GET', '/v1/admin/tenants', { query: { limit } }))
        .data,
    createKey: (tenantId: string, name?: string): Promise<ApiKey> =>
      this.http.request('POST', `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys`, {
        body: name !== undefined ? { name } : {},
      }),
    deleteKey: (keyId: string): Promise<void> =>
      this.http.request('DELETE', `/v1/admin/keys/${encodeURIComponent(keyId)}`),
    /** A tenant with its retention policy. */
    getTenant: (tenantId: string): Promise<TenantDetail> =>
      this.http.request('GET', `/v1/admin/tenants/${encodeURIComponent(tenantId)}`),
    /** Sets a tenant's retention policy: sessions not updated for `deleteAfterDays` are deleted by the sweeper. */
    setRetention: (tenantId: string, retention: RetentionPolicy): Promise<TenantDetail> =>
      this.http.request('PATCH', `/v1/admin/tenants/${encodeURIComponent(tenantId)}`, {
        body: { retention },
        idempotent: true,
      }),
    /** A page of tenants by name (`q`: name contains, case-insensitive; `cursor`: the previous nextCursor). */
    tenantsPage: (query: { q?: string; limit?: number; cursor?: string } = {}): Promise<TenantPage> =>
      this.http.request('GET', '/v1/admin/tenants', { query }),
    /** Renames and/or disables (enables) a tenant; disabling cancels its runs in flight. */
    updateTenant: (tenantId: string, patch: { name?: string; disabled?: boolean }): Promise<TenantDetail> =>
      this.http.request('PATCH', `/v1/admin/tenants/${encodeURIComponent(tenantId)}`, {
        body: patch,
        idempotent: true,
      }),
    /** A tenant's API keys (never the keys themselves). */
    listKeys: async (tenantId: string): Promise<ApiKeyInfo[]> =>
      (
        await this.http.request<{ data: ApiKeyInfo[] }>(
          'GET',
          `/v1/admin/tenants/${encodeURIComponent(tenantId)}/keys`,
        )
      ).data,
    /** A tenant's quotas and its users', with their usage. */
    getQuotas: (tenantId: string): Promise<Quotas> =>
      this.http.request('GET', `/v1/admin/tenants/${encodeURIComponent(tenantId)}/quotas`),
    /** Replaces a tenant's quotas ([] removes them). */
    setQuotas: (tenantId: string, quotas: QuotaInput[]): Promise<Quotas> =>
      this.http.request('PUT', `/v1/admin/tenants/${encodeURIComponent(tenantId)}/quotas`, {
        body: { quotas },
        idempotent: true,
      }),
  };

  /**
   * Files: attachments stored apart from the messages that refer to them (`{type: 'attachment', fileId}` in a
   * prompt). A user token reaches its own, a tenant key every file of its tenant.
   */
  readonly files = {
    /**
     * Uploads bytes (a browser's File or Blob, a Uint8Array, text): the service sniffs their type. `name` defaults to
     * a File's own; `type` to a Blob's.
     */
    upload: (
      data: Blob | Uint8Array | ArrayBuffer | string,
      options: { name?: string; type?: string } = {},
    ): Promise<FileView> => {
      const own = data as { name?: unknown; type?: unknown };
      const name = options.name ?? (typeof own.name === 'string' ? own.name : undefined);
      const type = options.type ?? (typeof own.type === 'string' && own.type !== '' ? own.type : undefined);
      return this.http.request('POST', '/v1/files', {
        query: { name },
        rawBody: data,
        headers: { 'content-type': type ?? 'application/octet-stream' },
      });
    },
    get: (fileId: string): Promise<FileView> =>
      this.http.request('GET', `/v1/files/${encodeURIComponent(fileId)}`),
    /** A page of files, newest first (`cursor`: the previous nextCursor). */
    list: (
      query: { limit?: number; cursor?: string } = {},
    ): Promise<{ data: FileView[]; nextCursor: string | null }> =>
      this.http.request('GET', '/v1/files', { query }),
    /** The file's bytes. */
    content: async (fileId: string): Promise<Blob> =>
      (await this.http.send('GET', `/v1/files/${encodeURIComponent(fileId)}/content`)).blob(),
    /** A short-lived URL of the file's bytes that needs no credential (an <img src>), absolute. */
    url: async (fileId: string, ttlSeconds?: number): Promise<FileUrlView> => {
      const signed = await this.http.request<FileUrlView>(
        'POST',
        `/v1/files/${encodeURIComponent(fileId)}/url`,
        {
          body: ttlSeconds !== undefined ? { ttlSeconds } : {},
          idempotent: true,
        },
      );
      return { ...signed, url: `${this.http.baseUrl}${signed.url}` };
    },
    delete: (fileId: string): Promise<void> =>
      this.http.request('DELETE', `/v1/files/${encodeURIComponent(fileId)}`),
  };

  /** Tenant key only: the tenant's own API keys. */
  readonly keys = {
    list: async (): Promise<ApiKeyInfo[]> =>
      (await this.http.request<{ data: ApiKeyInfo[] }>('GET', '/v1/keys')).data,
    /** A new key (shown once), optionally named and expiring (ISO 8601). */
    create: (input: { name?: string; expiresAt?: string } = {}): Promise<CreatedApiKey> =>
      this.http.request('POST', '/v1/keys', { body: input }),
    revoke: (keyId: string): Promise<void> =>
      this.http.request('DELETE', `/v1/keys/${encodeURIComponent(keyId)}`),
  };

  /** The audit log: a tenant key its own, the admin key any tenant's (`tenantId`) or all. */
  readonly audit = {
    list: (query: AuditQuery = {}): Promise<{ data: AuditEvent[]; nextCursor: string | null }> =>
      this.http.request('GET', '/v1/audit', { query: { ...query } }),
  };

  /** Tenant key only: webhook endpoints (Standard Webhooks) and their deliveries. */
  readonly webhooks = {
    /** Creates an endpoint; its signing `secret` is in this answer only. */
    create: (input: WebhookInput): Promise<Webhook & { secret: string }> =>
      this.http.request('POST', '/v1/webhooks', { body: input }),
    list: async (): Promise<Webhook[]> =>
      (await this.http.request<{ data: Webhook[] }>('GET', '/v1/webhooks')).data,
    get: (webhookId: string): Promise<Webhook> =>
      this.http.request('GET', `/v1/webhooks/${encodeURIComponent(webhookId)}`),
    update: (
      webhookId: string,
      patch: Partial<WebhookInput> & { description?: string | null },
    ): Promise<Webhook> =>
      this.http.request('PATCH', `/v1/webhooks/${encodeURIComponent(webhookId)}`, {
        body: patch,
        idempotent: true,
      }),
    delete: (webhookId: string): Promise<void> =>
      this.http.request('DELETE', `/v1/webhooks/${encodeURIComponent(webhookId)}`),
    deliveries: async (
      webhookId: string,
      query: { status?: WebhookDelivery['status']; limit?: number } = {},
    ): Promise<WebhookDelivery[]> =>
      (
        await this.http.request<{ data: WebhookDelivery[] }>(
          'GET',
          `/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries`,
          { query },
        )
      ).data,
    /** Sends a delivery again, now. */
    retry: (webhookId: string, deliveryId: string): Promise<WebhookDelivery> =>
      this.http.request(
        'POST',
        `/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}/retry`,
      ),
  };

  /** Tenant key only: quotas of the tenant (read) and of its users (read and set). */
  readonly quotas = {
    get: (): Promise<Quotas> => this.http.request('GET', '/v1/quotas'),
    setUser: (userId: string, quotas: QuotaInput[]): Promise<Quotas> =>
      this.http.request('PUT', `/v1/quotas/users/${encodeURIComponent(userId)}`, {
        body: { quotas },
        idempotent: true,
      }),
  };

  /** Usage of the stored runs grouped by day, user, model or session (tenant key: its own; admin: any or all). */
  readonly usage = {
    get: (query: UsageQuery = {}): Promise<UsageReport> =>
      this.http.request('GET', '/v1/usage', { query: { ...query } }),
  };

  /** Tenant key only: the tenant's own provider keys (bring your own key); the key is never read back. */
  readonly providers = {
    list: async (): Promise<ProviderKey[]> =>
      (await this.http.request<{ data: ProviderKey[] }>('GET', '/v1/providers')).data,
    get: (provider: ProviderName): Promise<ProviderKey> =>
      this.http.request('GET', `/v1/providers/${encodeURIComponent(provider)}`),
    put: (
      provider: ProviderName,
      input: { apiKey: string; baseUrl?: string; models?: string[] },
    ): Promise<ProviderKey> =>
      this.http.request('PUT', `/v1/providers/${encodeURIComponent(provider)}`, {
        body: input,
        idempotent: true,
      }),
    delete: (provider: ProviderName): Promise<void> =>
      this.http.request('DELETE', `/v1/providers/${encodeURIComponent(provider)}`),
  };

  /**
   * Tenant key only: the tenant's MCP servers, each with the tools it listed when last reached (a session enables
   * them by name in `opts.mcpServers`); their headers are never read back.
   */
  readonly mcpServers = {
    list: async (): Promise<McpServerView[]> =>
      (await this.http.request<{ data: McpServerView[] }>('GET', '/v1/mcp-servers')).data,
  };

  /**
   * Share links: a read-only link to the path of a session up to a node, as it is when shared. `read` needs no
   * credential (the one given is not sent to a link's owner, nor needed); `fork` continues a link as a session of
   * the caller's own, in the link's tenant only.
   */
  readonly shares = {
    create: (
      sessionId: string,
      input: { nodeId?: number; expiresAt?: string; title?: string | null; includeUsage?: boolean } = {},
    ): Promise<CreatedShareView> =>
      this.http.request('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/shares`, { body: input }),
    list: (
      query: { sessionId?: string; limit?: number; cursor?: string } = {},
    ): Promise<{ data: ShareView[]; nextCursor: string | null }> =>
      this.http.request('GET', '/v1/shares', { query }),
    revoke: (id: string): Promise<void> =>
      this.http.request('DELETE', `/v1/shares/${encodeURIComponent(id)}`),
    read: (token: string): Promise<SharedConversationView> =>
      this.http.request('GET', `/v1/shared/${encodeURIComponent(token)}`),
    fork: (token: string, input: { title?: string | null } = {}): Promise<SessionInfo> =>
      this.http.request('POST', `/v1/shared/${encodeURIComponent(token)}/fork`, { body: input }),
  };

  /** Ratings of replies: one per rater and reply (a tenant key may rate for one of its users with `userId`). */
  readonly feedback = {
    put: (
      sessionId: string,
      nodeId: number,
      input: { rating: FeedbackRating; comment?: string | null; tags?: string[]; userId?: string },
    ): Promise<FeedbackView> =>
      this.http.request('PUT', `/v1/sessions/${encodeURIComponent(sessionId)}/nodes/${nodeId}/feedback`, {
        body: input,
        idempotent: true,
      }),
    delete: (sessionId: string, nodeId: number, userId?: string): Promise<void> =>
      this.http.request('DELETE', `/v1/sessions/${encodeURIComponent(sessionId)}/nodes/${nodeId}/feedback`, {
        query: { userId },
      }),
    list: (
      query: {
        from?: string;
        to?: string;
        model?: string;
        rating?: FeedbackRating;
        userId?: string;
        sessionId?: string;
        limit?: number;
        cursor?: string;
      } = {},
    ): Promise<{ data: FeedbackView[]; nextCursor: string | null }> =>
      this.http.request('GET', '/v1/feedback', { query }),
  };

  /** Tenant key only: a token for one of your end users (their browser can then use the API as them). */
  readonly tokens = {
    create: (userId: string, ttlSeconds?: number): Promise<UserToken> =>
      this.http.request('POST', '/v1/tokens', {
        body: { userId, ...(ttlSeconds !== undefined ? { ttlSeconds } : {}) },
      }),
  };

  readonly sessions = {
    /** Creates a session and answers its handle with the created data. */
    create: async (input: CreateSessionInput): Promise<{ session: Session; info: SessionInfo }> => {
      const info = await this.http.request<SessionInfo>('POST', '/v1/sessions', { body: input });
      return { session: this.session(info.id), info };
    },
    list: (query: ListSessionsQuery = {}): Promise<Page<SessionInfo>> => {
      const { limit, cursor, ...filter } = query;
      const { query: q, repeated } = filterQuery(filter);
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries({ ...q, limit, cursor }))
        if (v !== undefined && v !== null) params.set(k, String(v));
      for (const [k, v] of repeated) params.append(k, v);
      const qs = params.toString();
      return this.http.request('GET', `/v1/sessions${qs ? `?${qs}` : ''}`);
    },
    /**
     * Full-text search over message text (`"quoted phrases"`, `or`, `-word`) with the list filters; ranked hits
     * with their matching node ids and a snippet.
     */
    search: (q: string, query?: Parameters<Catalog['search']>[1]) => this.catalog.search(q, query),
    /** How many sessions match the filters (and the words `q`). */
    count: (filter?: Parameters<Catalog['count']>[0]) => this.catalog.count(filter),
    /** Imports a conversation (canopy, openai, anthropic, chatgpt) as a new session; all or nothing. */
    import: async (
      input: Parameters<Catalog['import']>[0],
    ): Promise<{ session: Session; info: SessionInfo }> => {
      const info = await this.catalog.import(input);
      return { session: this.session(info.id), info };
    },
    /** Every session matching the filters as canopy documents, streamed (resume with exportCursorOf). */
    exportAll: (filter?: Parameters<Catalog['exportAll']>[0]) => this.catalog.exportAll(filter),
    /** Imports many conversations (documents, or NDJSON text), each on its own, with a report per line. */
    importMany: (
      documents: Parameters<Catalog['importMany']>[0],
      options?: Parameters<Catalog['importMany']>[1],
    ) => this.catalog.importMany(documents, options),
    /** Deletes sessions by ids or filter, at most 500 a call (`more`: call again). */
    deleteMany: (target: Parameters<Catalog['deleteMany']>[0]) => this.catalog.deleteMany(target),
    /** Cancels the runs in flight of sessions by ids or filter. */
    cancelMany: (target: Parameters<Catalog['cancelMany']>[0]) => this.catalog.cancelMany(target),
  };

  readonly runs = {
    get: (runId: string): Promise<RunInfo> =>
      this.http.request('GET', `/v1/runs/${encodeURIComponent(runId)}`),
  };

  /** The live sessions of the deployment and where each is served. */
  readonly live = {
    list: async (): Promise<LiveEntry[]> =>
      (await this.http.request<{ data: LiveEntry[] }>('GET', '/v1/live')).data,
    /** null when the session is not live. */
    get: async (sessionId: string): Promise<LiveEntry | null> => {
      try {
        return await this.http.request<LiveEntry>('GET', `/v1/live/${encodeURIComponent(sessionId)}`);
      } catch (err) {
        if ((err as { code?: string }).code === 'not_found') return null;
        throw err;
      }
    },
  };

  /**
   * A WebSocket connection for live sessions, the activity feed and commands (reconnects and resubscribes by
   * itself). In Node 20 pass `{ WebSocket }` from the `ws` package.
   */
  connect(options: LiveSocketOptions = {}): LiveSocket {
    return new LiveSocket(async () => {
      const url = new URL(this.http.url('/v1/ws'));
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      url.searchParams.set('token', await this.http.credential());
      return url.toString();
    }, options);
  }

  /**
   * The models sessions can use on this deployment: the built-in mocks and each configured provider's listed
   * models, with their provider and whether they take tools (what a model picker offers).
   */
  async models(): Promise<ModelInfo[]> {
    return (await this.http.request<{ data: ModelInfo[] }>('GET', '/v1/models')).data;
  }

  /** The server tools registered on the deployment (enable them per session in `opts.serverTools`). */
  async serverTools(): Promise<ServerToolInfo[]> {
    return (await this.http.request<{ data: ServerToolInfo[] }>('GET', '/v1/tools')).data;
  }

  /**
   * Over the last `minutes` (default 60, at most 1440): runs started, finished and failed, tokens and latency
   * p50/p95 per minute, usage per tenant, the latest runs with their sessions' titles, and live sessions per
   * minute as the answering api instance sampled them. The tenant's own with an API key, every tenant's with the
   * admin key.
   */
  stats(minutes?: number): Promise<RunStats> {
    return this.http.request('GET', '/v1/stats', { query: { minutes } });
  }

  /**
   * Per model (or per user) over a window of UTC days (default the last 30): runs, errors, latency p50/p95, tokens,
   * cost and the share of thumbs up, from the daily rollup. A tenant key: its own; the admin key: every tenant's.
   */
  modelStats(
    query: { from?: string; to?: string; groupBy?: 'model' | 'user'; tenantId?: string } = {},
  ): Promise<ModelStatsView> {
    return this.http.request('GET', '/v1/stats/models', { query });
  }

  /** A handle on a session by id (no request is made). */
  session(id: string): Session {
    return new Session(this.http, id);
  }

  /**
   * The activity feed of the tenant (every tenant's with the admin key): `opened`, `status`, `title`, `closed`,
   * `run_started`, `run_finished`. Reconnects by itself; ends when the signal aborts; throws `unauthorized` or
   * `tenant_disabled` when the server ended it because its credential stopped being valid.
   */
  async *activity(options: { signal?: AbortSignal } = {}): AsyncGenerator<ActivityEvent> {
    const messages = sseStream(this.http, '/v1/activity', {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    for await (const message of messages) {
      const refused = credentialEnd(message);
      if (refused) throw refused;
      if (!ACTIVITY_TYPES.has(message.event)) continue;
      const { tenantId, at, ...data } = JSON.parse(message.data) as Record<string, unknown>;
      yield { tenantId, type: message.event as ActivityEventType, data, at } as ActivityEvent;
    }
  }
}

const ACTIVITY_TYPES = new Set<string>([
  'opened',
  'status',
  'title',
  'closed',
  'run_started',
  'run_finished',
]);
