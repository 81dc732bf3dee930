// The Canopy client: admin, tokens, sessions, runs, the live registry and the activity feed of one deployment,
// for a backend (Node 18+) or a browser (fetch).

import type { ActivityEvent, ActivityEventType, ModelInfo, ServerToolInfo, TenantInfo } from '@canopy/core';

import { Http, type HttpOptions } from './http';
import { LiveSocket, type LiveSocketOptions } from './live-socket';
import { Session } from './session';
import { sseStream } from './sse';
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
import type { SessionInfo } from '@canopy/core';

export type CanopyOptions = HttpOptions;

export class Canopy {
  private readonly http: Http;

  constructor(options: CanopyOptions) {
    this.http = new Http(options);
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
      const { metadata, ...rest } = query;
      const q: Record<string, string | number | boolean | undefined> = { ...rest };
      for (const [k, v] of Object.entries(metadata ?? {})) q[`metadata.${k}`] = v;
      return this.http.request('GET', '/v1/sessions', { query: q });
    },
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

  /** A handle on a session by id (no request is made). */
  session(id: string): Session {
    return new Session(this.http, id);
  }

  /**
   * The activity feed of the tenant (every tenant's with the admin key): `opened`, `status`, `title`, `closed`,
   * `run_started`, `run_finished`. Reconnects by itself; ends when the signal aborts.
   */
  async *activity(options: { signal?: AbortSignal } = {}): AsyncGenerator<ActivityEvent> {
    const messages = sseStream(this.http, '/v1/activity', {
      ...(options.signal ? { signal: options.signal } : {}),
    });
    for await (const message of messages) {
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
