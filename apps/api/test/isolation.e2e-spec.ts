// Isolation between tenants and between the users of one tenant, generated from the app's own route list:
// every /v1 route of the OpenAPI document is called with real ids of tenant A (a session of user "alice" with
// a few nodes and a finished run) and a valid body, by tenant B's API key, by a user token of another user of
// A ("mallory") and by the admin key. Session, tree, run and live routes must answer 404 not_found (never
// reveal, never act), admin routes 403 forbidden. A route the table below does not know fails the test, so a
// new route cannot go unchecked. Afterwards A's session must read byte for byte as before. Also: the owner's
// token still works, user tokens only list their own sessions, WebSocket frames and activity feeds stay
// inside their tenant, and revoked keys answer 401 everywhere.

import { eventually } from '@canopy/testing';
import { Api, newTenant, SseReader } from './support/api-client';
import {
  call,
  errorMismatch,
  describeBody,
  fetchOpenApi,
  fillPath,
  operationsOf,
  type CallResult,
  type Operation,
} from './support/routes';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from './support/test-app';
import { WsClient, wsUrl } from './support/ws-client';

/** Real ids of tenant A the generated requests are built from. */
interface Ids {
  id: string;
  /** A user node on the active path (starts a turn; a regenerate target). */
  nodeId: number;
  runId: string;
  tenantId: string;
  keyId: string;
  webhookId: string;
  deliveryId: string;
  /** An MCP server of A's (with headers, and alice's own). */
  mcpServerId: string;
  /** Alice: a user of A (quota routes name users). */
  userId: string;
  /** A provider A brought its own key for. */
  provider: string;
  /** A prompt waiting in the queue of `queueSession`, a session of alice's kept busy. */
  queueId: string;
  queueSession: string;
  /** A file alice uploaded, and the query of a signed URL of it. */
  fileId: string;
  signedQuery: string;
  /** Alice's share link of her session, and its token. */
  shareId: string;
  token: string;
  /** A chat of alice's begun over the AI SDK's protocol (POST /v1/ui/chat): its id chosen by her client. */
  chatId: string;
  /** A thread of alice's begun over AG-UI (POST /v1/ag-ui). */
  threadId: string;
}

type Kind =
  | 'session'
  | 'create'
  | 'list'
  | 'liveList'
  | 'activity'
  | 'stats'
  | 'models'
  | 'tokens'
  | 'admin'
  | 'websocket'
  | 'mcp'
  | 'search'
  | 'count'
  | 'exportAll'
  | 'importAll'
  | 'bulk'
  | 'tenantOwned'
  | 'operator'
  | 'fileUpload'
  | 'fileList'
  | 'signedFile'
  | 'shareList'
  | 'sharedLink'
  | 'sharedFork'
  | 'modelStats'
  | 'feedbackList'
  | 'feedbackExport'
  | 'frontendRun';
type Who = 'otherTenant' | 'otherUser' | 'admin';

interface RouteSpec {
  kind: Kind;
  /** A minimal valid body: the request would act if isolation failed. */
  body?: (ids: Ids) => unknown;
  /** The route also takes the credential as `?token=` (SSE). */
  queryToken?: boolean;
  /** A query string the request carries (words of A's session, for search and count). */
  query?: string;
  /** A query string made from the ids (a signed URL's). */
  queryOf?: (ids: Ids) => string;
  /** The body is sent as is with this content type (NDJSON). */
  contentType?: string;
  /** Path ids other than the common ones (a queued prompt is in a session of its own). */
  ids?: (ids: Ids) => Partial<Ids>;
}

/** Words only alice's session (tenant A) has: what search and count look for. */
const A_WORDS = 'q=first%20words';

/** Every /v1 route of the OpenAPI document must be here (and nothing else). */
const ROUTES: Record<string, RouteSpec> = {
  'POST /v1/admin/tenants': { kind: 'admin', body: () => ({ name: 'intruder' }) },
  'GET /v1/admin/tenants': { kind: 'admin' },
  'POST /v1/admin/tenants/{tenantId}/keys': { kind: 'admin', body: () => ({ name: 'intruder' }) },
  'DELETE /v1/admin/keys/{keyId}': { kind: 'admin' },
  'POST /v1/tokens': { kind: 'tokens', body: () => ({ userId: 'alice' }) },
  'POST /v1/sessions': {
    kind: 'create',
    body: () => ({ model: 'mock:echo', userId: 'alice', title: 'not hers' }),
  },
  'GET /v1/sessions': { kind: 'list' },
  'GET /v1/sessions/search': { kind: 'search', query: A_WORDS },
  'GET /v1/sessions/count': { kind: 'count', query: A_WORDS },
  'POST /v1/sessions/{id}/fork': { kind: 'session', body: () => ({ title: 'stolen' }) },
  'GET /v1/sessions/{id}/export': { kind: 'session', query: 'format=canopy' },
  'POST /v1/sessions/import': {
    kind: 'create',
    body: () => ({ format: 'openai', data: [{ role: 'user', content: 'imported words' }], userId: 'alice' }),
  },
  'GET /v1/export': { kind: 'exportAll' },
  'POST /v1/import': {
    kind: 'importAll',
    contentType: 'application/x-ndjson',
    body: () => JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'bulk imported words' }] }),
    query: 'format=openai',
  },
  'POST /v1/sessions/delete': { kind: 'bulk', body: (ids) => ({ ids: [ids.id] }) },
  'POST /v1/sessions/cancel': { kind: 'bulk', body: (ids) => ({ ids: [ids.id] }) },
  'GET /v1/admin/tenants/{tenantId}': { kind: 'admin' },
  'PATCH /v1/admin/tenants/{tenantId}': {
    kind: 'admin',
    body: () => ({ retention: { deleteAfterDays: 1 } }),
  },
  'GET /v1/sessions/{id}': { kind: 'session' },
  'PATCH /v1/sessions/{id}': { kind: 'session', body: () => ({ title: 'pwned', metadata: { pwned: true } }) },
  'DELETE /v1/sessions/{id}': { kind: 'session' },
  'POST /v1/sessions/{id}/close': { kind: 'session' },
  'POST /v1/sessions/{id}/open': {
    kind: 'session',
    body: () => ({ system: 'pwned', opts: { pwned: true }, mode: 'controller' }),
  },
  'GET /v1/sessions/{id}/tree': { kind: 'session' },
  'GET /v1/sessions/{id}/nodes/{nodeId}': { kind: 'session' },
  'GET /v1/sessions/{id}/nodes/{nodeId}/children': { kind: 'session' },
  'GET /v1/sessions/{id}/nodes/{nodeId}/siblings': { kind: 'session' },
  'GET /v1/sessions/{id}/nodes/{nodeId}/path': { kind: 'session' },
  'GET /v1/sessions/{id}/messages': { kind: 'session' },
  'GET /v1/sessions/{id}/turns': { kind: 'session' },
  'GET /v1/sessions/{id}/turns/{nodeId}': { kind: 'session' },
  'GET /v1/sessions/{id}/context': { kind: 'session', query: 'nodeId=1' },
  'POST /v1/sessions/{id}/prompt': { kind: 'session', body: () => ({ content: 'pwned', wait: true }) },
  'POST /v1/sessions/{id}/branch': { kind: 'session', body: (ids) => ({ nodeId: ids.nodeId, wait: true }) },
  'POST /v1/sessions/{id}/navigate': { kind: 'session', body: (ids) => ({ nodeId: ids.nodeId + 1 }) },
  'POST /v1/sessions/{id}/cancel': { kind: 'session' },
  'DELETE /v1/sessions/{id}/queue/{queueId}': { kind: 'session', ids: (ids) => ({ id: ids.queueSession }) },
  'POST /v1/sessions/{id}/resume': { kind: 'session', body: () => ({ decision: { type: 'execute' } }) },
  'GET /v1/runs/{runId}': { kind: 'session' },
  'GET /v1/live': { kind: 'liveList' },
  'GET /v1/live/{id}': { kind: 'session' },
  'GET /v1/sessions/{id}/events': { kind: 'session', queryToken: true },
  'GET /v1/activity': { kind: 'activity', queryToken: true },
  'GET /v1/stats': { kind: 'stats' },
  'GET /v1/stats/models': { kind: 'modelStats', query: 'groupBy=user' },
  'GET /v1/models': { kind: 'models' },
  'GET /v1/tools': { kind: 'models' },
  'GET /v1/ws': { kind: 'websocket' },
  // JSON-RPC over one POST: every answer is 200 with a result or a tool error, which the verdicts here cannot
  // read; mcp-server.e2e-spec.ts drives it with the SDK's client as another tenant and another user instead.
  'POST /v1/mcp': { kind: 'mcp' },
  // The frontend protocols: a chat or thread id names a session of the caller's own (created on first use).
  'POST /v1/ui/chat': {
    kind: 'frontendRun',
    body: (ids) => ({
      id: ids.chatId,
      trigger: 'submit-message',
      model: 'mock:echo',
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'pwned' }] }],
    }),
  },
  // Alice's busy session: the owner's resume answers its run's stream (an idle one answers 204).
  'GET /v1/ui/chat/{id}/stream': { kind: 'session', ids: (ids) => ({ id: ids.queueSession }) },
  'GET /v1/ui/chat/{id}/messages': { kind: 'session' },
  'POST /v1/ag-ui': {
    kind: 'frontendRun',
    body: (ids) => ({
      threadId: ids.threadId,
      runId: 'r1',
      messages: [{ id: 'm1', role: 'user', content: 'pwned' }],
      forwardedProps: { model: 'mock:echo' },
    }),
  },
  'GET /v1/admin/tenants/{tenantId}/keys': { kind: 'admin' },
  'GET /v1/keys': { kind: 'tenantOwned' },
  'POST /v1/keys': { kind: 'tenantOwned', body: () => ({ name: 'mine' }) },
  'DELETE /v1/keys/{keyId}': { kind: 'tenantOwned' },
  'GET /v1/audit': { kind: 'operator' },
  'GET /v1/usage': { kind: 'operator' },
  'GET /v1/quotas': { kind: 'tenantOwned' },
  'PUT /v1/quotas/users/{userId}': {
    kind: 'tenantOwned',
    body: () => ({ quotas: [{ metric: 'runs', period: 'day', limit: 0 }] }),
  },
  'GET /v1/providers': { kind: 'tenantOwned' },
  'GET /v1/providers/{provider}': { kind: 'tenantOwned' },
  'PUT /v1/providers/{provider}': { kind: 'tenantOwned', body: () => ({ apiKey: 'sk-of-the-caller-1234' }) },
  'DELETE /v1/providers/{provider}': { kind: 'tenantOwned' },
  'GET /v1/settings': { kind: 'tenantOwned' },
  'PUT /v1/settings': { kind: 'tenantOwned', body: () => ({ context: { strategy: 'truncate' } }) },
  'GET /v1/admin/tenants/{tenantId}/quotas': { kind: 'admin' },
  'PUT /v1/admin/tenants/{tenantId}/quotas': {
    kind: 'admin',
    body: () => ({ quotas: [{ metric: 'runs', period: 'day', limit: 0 }] }),
  },
  'POST /v1/webhooks': {
    kind: 'tenantOwned',
    body: () => ({ url: 'http://127.0.0.1:9/mine', events: ['run.completed'] }),
  },
  'GET /v1/webhooks': { kind: 'tenantOwned' },
  'GET /v1/webhooks/{webhookId}': { kind: 'tenantOwned' },
  'PATCH /v1/webhooks/{webhookId}': {
    kind: 'tenantOwned',
    body: () => ({ url: 'http://127.0.0.1:9/pwned' }),
  },
  'DELETE /v1/webhooks/{webhookId}': { kind: 'tenantOwned' },
  // Disabled: B's own server is never connected to (GET /v1/tools lists the enabled ones).
  'POST /v1/mcp-servers': {
    kind: 'tenantOwned',
    body: () => ({ name: 'mine', url: 'https://93.184.215.14/mcp', enabled: false }),
  },
  'GET /v1/mcp-servers': { kind: 'tenantOwned' },
  'GET /v1/mcp-servers/{mcpServerId}': { kind: 'tenantOwned' },
  'PATCH /v1/mcp-servers/{mcpServerId}': {
    kind: 'tenantOwned',
    body: () => ({ url: 'https://93.184.215.14/pwned' }),
  },
  'DELETE /v1/mcp-servers/{mcpServerId}': { kind: 'tenantOwned' },
  'PUT /v1/users/{userId}/mcp-servers/{mcpServerId}/credentials': {
    kind: 'tenantOwned',
    body: () => ({ headers: { Authorization: 'Bearer pwned' } }),
  },
  'DELETE /v1/users/{userId}/mcp-servers/{mcpServerId}/credentials': { kind: 'tenantOwned' },
  'POST /v1/sessions/{id}/shares': { kind: 'session', body: () => ({ title: 'stolen' }) },
  'GET /v1/shares': { kind: 'shareList' },
  'DELETE /v1/shares/{shareId}': { kind: 'session' },
  // No credential needed: whoever holds the token reads the snapshot, and nothing else of A.
  'GET /v1/shared/{token}': { kind: 'sharedLink' },
  'POST /v1/shared/{token}/fork': { kind: 'sharedFork', body: () => ({}) },
  'PUT /v1/sessions/{id}/nodes/{nodeId}/feedback': { kind: 'session', body: () => ({ rating: 'down' }) },
  'DELETE /v1/sessions/{id}/nodes/{nodeId}/feedback': { kind: 'session' },
  'GET /v1/feedback': { kind: 'feedbackList' },
  'GET /v1/feedback/export': { kind: 'feedbackExport' },
  'GET /v1/webhooks/{webhookId}/deliveries': { kind: 'tenantOwned' },
  'POST /v1/webhooks/{webhookId}/deliveries/{deliveryId}/retry': { kind: 'tenantOwned' },
  // A raw upload (the JSON body is the file's bytes): the caller's own file.
  'POST /v1/files': { kind: 'fileUpload', body: () => ({ not: 'a file of A' }) },
  'GET /v1/files': { kind: 'fileList' },
  'GET /v1/files/{fileId}': { kind: 'session' },
  'GET /v1/files/{fileId}/content': { kind: 'session' },
  'POST /v1/files/{fileId}/url': { kind: 'session', body: () => ({ ttlSeconds: 60 }) },
  'DELETE /v1/files/{fileId}': { kind: 'session' },
  // The signed URL is the credential (whoever holds it reads that one file until it expires): files.e2e-spec.ts
  // shows another tenant cannot get one for A's file, nor turn one into another file's or a later expiry.
  'GET /v1/files/{fileId}/signed': { kind: 'signedFile', queryOf: (ids) => ids.signedQuery },
};

interface Tenant {
  tenantId: string;
  api: Api;
  key: string;
}

let t: TestApp;
let a: Tenant;
let b: Tenant;
let admin: Api;
let ids: Ids;
let secondKeyOfA: string;
let aliceToken: string;
let malloryToken: string;
let operations: Operation[];
let before: string;
/** Every session id of tenant A when the hostile calls start. */
let idsOfA: Set<string>;
/** Sessions mallory made by continuing alice's shared link (hers to make: deleted before the last comparison). */
const forksOfMallory: string[] = [];

const credentials = (): Record<Who, string> => ({
  otherTenant: b.key,
  otherUser: malloryToken,
  admin: TEST_ADMIN_KEY,
});

/** What `who` must get from a route of this kind; a string describes the mismatch, null means as expected. */
function verdict(kind: Kind, who: Who, res: CallResult, path = ''): string | null {
  const body = res.body as
    | {
        id?: string;
        userId?: string | null;
        token?: string;
        data?: Array<{ id: string; userId: string | null }>;
      }
    | undefined;
  const data = body?.data;
  if (kind === 'sharedLink') {
    // The link answers its snapshot to anyone: its title and turns, never an id or metadata of A.
    if (res.status !== 200) return `expected 200, got ${res.status}`;
    const text = JSON.stringify(res.body);
    return revealsA(res) || [ids.id, '"userId"', '"owner"', '"metadata"'].some((x) => text.includes(x))
      ? `reveals A: ${describeBody(res)}`
      : null;
  }
  if (who === 'admin') {
    if (kind === 'activity') return res.status === 200 && res.stream ? null : `expected 200 stream`;
    // The operator's views of every tenant (the admin's by design).
    if (kind === 'stats' || kind === 'liveList' || kind === 'modelStats')
      return res.status === 200 ? null : `expected 200, got ${res.status}`;
    if (kind === 'models') return modelsVerdict(res);
    if (kind === 'operator') return res.status === 200 ? null : `expected 200, got ${res.status}`;
    return errorMismatch(res, 403, 'forbidden');
  }
  switch (kind) {
    case 'session':
      return errorMismatch(res, 404, 'not_found');
    case 'create':
      // Allowed, but only inside the caller's own tenant and, for a user token, as that user.
      if (res.status !== 201) return `expected 201, got ${res.status}`;
      return body?.userId === (who === 'otherUser' ? 'mallory' : 'alice') && body.id !== ids.id
        ? null
        : `unexpected session ${describeBody(res)}`;
    case 'list':
    case 'liveList': {
      if (res.status !== 200 || !Array.isArray(data)) return `expected 200 {data}, got ${res.status}`;
      const foreign = data.filter((s) => (who === 'otherUser' ? s.userId !== 'mallory' : idsOfA.has(s.id)));
      return foreign.length === 0 ? null : `sees ${JSON.stringify(foreign)}`;
    }
    case 'search': {
      const hits = (res.body as { data?: Array<{ session: { id: string } }> } | undefined)?.data;
      if (res.status !== 200 || !Array.isArray(hits)) return `expected 200 {data}, got ${res.status}`;
      return hits.length === 0 ? null : `finds ${JSON.stringify(hits.map((h) => h.session.id))}`;
    }
    case 'count': {
      const count = (res.body as { count?: number } | undefined)?.count;
      return res.status === 200 && count === 0
        ? null
        : `expected {count: 0}, got ${res.status} ${describeBody(res)}`;
    }
    case 'exportAll': {
      if (res.status !== 200) return `expected 200 NDJSON, got ${res.status}`;
      const docs = ndjsonOf<{ session: { id: string; userId: string | null } }>(res);
      const foreign = docs.filter((d) =>
        who === 'otherUser' ? d.session.userId !== 'mallory' : idsOfA.has(d.session.id),
      );
      return foreign.length === 0 ? null : `exports ${JSON.stringify(foreign.map((d) => d.session.id))}`;
    }
    case 'importAll': {
      if (res.status !== 200) return `expected 200 NDJSON, got ${res.status}`;
      const [report] = ndjsonOf<{ ok: boolean; id?: string }>(res);
      return report?.ok && report.id !== ids.id ? null : `unexpected report ${describeBody(res)}`;
    }
    case 'bulk': {
      const done = res.body as { deleted?: number; cancelled?: number } | undefined;
      return res.status === 200 && (done?.deleted ?? done?.cancelled) === 0
        ? null
        : `expected nothing done, got ${res.status} ${describeBody(res)}`;
    }
    case 'activity':
      if (who === 'otherUser') return errorMismatch(res, 403, 'forbidden');
      return res.status === 200 && res.stream ? null : `expected 200 stream, got ${res.status}`;
    case 'stats': {
      if (who === 'otherUser') return errorMismatch(res, 403, 'forbidden');
      const stats = res.body as
        | {
            usageByTenant?: Array<{ tenantId: string }>;
            recentRuns?: Array<{ tenantId: string; sessionId: string }>;
          }
        | undefined;
      const usage = stats?.usageByTenant;
      const recent = stats?.recentRuns;
      if (res.status !== 200 || !Array.isArray(usage) || !Array.isArray(recent))
        return `expected 200 {usageByTenant, recentRuns}, got ${res.status}`;
      const foreign = [
        ...usage.filter((u) => u.tenantId !== b.tenantId),
        ...recent.filter((r) => r.tenantId !== b.tenantId || idsOfA.has(r.sessionId)),
      ];
      return foreign.length === 0 ? null : `sees ${JSON.stringify(foreign)}`;
    }
    case 'models':
      return modelsVerdict(res);
    case 'shareList':
    case 'feedbackList':
    case 'feedbackExport': {
      // Only the caller's own: nothing of A's sessions (another tenant), nothing of alice's (another user).
      const rows =
        kind === 'feedbackExport'
          ? ndjsonOf<{ sessionId: string; userId: string | null }>(res)
          : (res.body as { data?: Array<{ sessionId: string; userId: string | null }> } | undefined)?.data;
      if (res.status !== 200 || !Array.isArray(rows)) return `expected 200 with rows, got ${res.status}`;
      const foreign = rows.filter((r) => idsOfA.has(r.sessionId) || r.userId === 'alice');
      return foreign.length === 0 ? null : `sees ${JSON.stringify(foreign)}`;
    }
    case 'modelStats': {
      // Per user: B's own users only (A's alice never), none for a user token.
      if (who === 'otherUser') return errorMismatch(res, 403, 'forbidden');
      const rows = (res.body as { data?: Array<{ key: string | null }> } | undefined)?.data;
      if (res.status !== 200 || !Array.isArray(rows)) return `expected 200 {data}, got ${res.status}`;
      return rows.some((r) => r.key === 'alice') ? `sees ${JSON.stringify(rows)}` : null;
    }
    case 'sharedFork':
      // Continuing a link is for its own tenant: another tenant gets not_found; another user of A its own session.
      if (who === 'otherTenant') return errorMismatch(res, 404, 'not_found');
      if (res.status === 201 && body?.id) forksOfMallory.push(body.id);
      return res.status === 201 && body?.userId === 'mallory' && body.id !== ids.id
        ? null
        : `expected 201, a session of mallory's, got ${res.status} ${describeBody(res)}`;
    case 'fileUpload':
      // Allowed: a file of the caller's own (a user token's as that user), never A's.
      if (res.status !== 201) return `expected 201, got ${res.status} ${describeBody(res)}`;
      return body?.id !== ids.fileId && body?.userId === (who === 'otherUser' ? 'mallory' : null)
        ? null
        : `unexpected file ${describeBody(res)}`;
    case 'fileList': {
      if (res.status !== 200 || !Array.isArray(data)) return `expected 200 {data}, got ${res.status}`;
      const foreign = data.filter((f) => f.id === ids.fileId || f.userId === 'alice');
      return foreign.length === 0 ? null : `sees ${JSON.stringify(foreign)}`;
    }
    case 'tenantOwned':
    case 'operator': {
      // A tenant's own resources (keys, webhooks, quotas, provider keys, its audit log): a user token has no
      // access; another tenant reaches A's by id as not_found, and its listings and creations hold nothing of A.
      if (who === 'otherUser') return errorMismatch(res, 403, 'forbidden');
      if (/\{(keyId|webhookId|deliveryId|mcpServerId)\}/.test(path))
        return errorMismatch(res, 404, 'not_found');
      // B's own provider key: it has none to read or delete; its PUT stores its own.
      if (/\{provider\}/.test(path) && res.status === 404) return null;
      if (res.status >= 300) return `expected 2xx or 404, got ${res.status} ${describeBody(res)}`;
      return revealsA(res) ? `reveals A: ${describeBody(res)}` : null;
    }
    case 'tokens': {
      if (who === 'otherUser') return errorMismatch(res, 403, 'forbidden');
      if (res.status !== 201 || typeof body?.token !== 'string') return `expected 201, got ${res.status}`;
      return claimsOf(body.token).tid === b.tenantId ? null : 'minted a token outside its own tenant';
    }
    case 'frontendRun':
      // Ids are per tenant: another tenant's request names a chat of its own, and never reaches A's (which is
      // read byte for byte afterwards); another user of A's is not shown A's chat, nor given one of that id.
      if (who === 'otherUser') return errorMismatch(res, 404, 'not_found');
      return res.status === 200 && res.stream ? null : `expected its own chat's stream, got ${res.status}`;
    default:
      return `no verdict for ${kind}`;
  }
}

/** Whether an answer carries one of tenant A's ids. */
function revealsA(res: CallResult): boolean {
  const text = JSON.stringify(res.body ?? '');
  return [
    ids.tenantId,
    ids.keyId,
    ids.runId,
    ids.webhookId,
    ids.deliveryId,
    ids.mcpServerId,
    'sk-secret-of-tenant-a',
    'mcp-secret-of-tenant-a',
    'prompt-of-tenant-a',
  ].some((id) => text.includes(id));
}

/** The lines of an NDJSON answer (`call` parsed a one-line answer as JSON already, and an empty one as nothing). */
function ndjsonOf<T>(res: CallResult): T[] {
  if (res.body === undefined) return [];
  if (typeof res.body !== 'string') return [res.body as T];
  return res.body
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
}

/** Every credential lists the deployment's models and server tools (nothing in them belongs to a tenant). */
function modelsVerdict(res: CallResult): string | null {
  const data = (res.body as { data?: Array<{ id?: string; name?: string }> } | undefined)?.data;
  return res.status === 200 &&
    Array.isArray(data) &&
    data.some((m) => m.id === 'mock:echo' || m.name === 'clock')
    ? null
    : `expected 200 with mock:echo or the clock tool, got ${res.status} ${describeBody(res)}`;
}

interface Listing {
  data: Array<{ id: string; userId: string | null }>;
  nextCursor?: string | null;
}

const idsIn = (listing: unknown): string[] => (listing as Listing).data.map((s) => s.id);

function claimsOf(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<
    string,
    unknown
  >;
}

function specOf(op: Operation): RouteSpec {
  const spec = ROUTES[op.key];
  if (!spec) throw new Error(`route ${op.key} is not in the isolation table`);
  return spec;
}

/** Calls one route as one credential (header, or `?token=` when asked). */
async function callAs(op: Operation, credential: string, viaQuery = false): Promise<CallResult> {
  const spec = specOf(op);
  let path = fillPath(op.path, { ...ids, ...spec.ids?.(ids) });
  const query = [
    spec.query ?? spec.queryOf?.(ids),
    viaQuery ? `token=${encodeURIComponent(credential)}` : undefined,
  ].filter(Boolean);
  if (query.length) path += `?${query.join('&')}`;
  return call(t.url, op.method, path, {
    ...(viaQuery ? {} : { credential }),
    ...(spec.body ? { body: spec.body(ids) } : {}),
    ...(spec.contentType ? { headers: { 'content-type': spec.contentType } } : {}),
  });
}

/** Tenant A's session as its owner's tenant reads it: raw bytes of every view of it. */
async function snapshotOfA(): Promise<string> {
  const paths = [
    `/v1/sessions/${ids.id}`,
    `/v1/sessions/${ids.id}/tree`,
    `/v1/sessions/${ids.id}/messages`,
    `/v1/sessions/${ids.id}/turns`,
    `/v1/runs/${ids.runId}`,
    `/v1/live/${ids.id}`,
    `/v1/sessions?userId=alice`,
    `/v1/sessions/search?${A_WORDS}`,
    `/v1/sessions/${ids.id}/export`,
    `/v1/settings`,
    `/v1/files/${ids.fileId}`,
    `/v1/files/${ids.fileId}/content`,
    `/v1/ui/chat/${ids.chatId}/messages`,
    `/v1/sessions/${ids.chatId}/tree`,
    `/v1/sessions/${ids.threadId}/tree`,
  ];
  const parts: string[] = [];
  for (const path of paths) {
    const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${a.key}` } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status} ${text}`);
    parts.push(`${path}\n${text}`);
  }
  return parts.join('\n');
}

beforeAll(async () => {
  // Private webhook URLs allowed: A's endpoint is a closed local port.
  t = await startTestApp({ env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
  admin = new Api(t.url, TEST_ADMIN_KEY);
  a = await newTenant(t, 'tenant A');
  b = await newTenant(t, 'tenant B');
  const second = await admin.post(`/v1/admin/tenants/${a.tenantId}/keys`, { name: 'second' });
  expect(second.status).toBe(201);
  secondKeyOfA = second.body.apiKey;
  aliceToken = (await a.api.post('/v1/tokens', { userId: 'alice' })).body.token;
  malloryToken = (await a.api.post('/v1/tokens', { userId: 'mallory' })).body.token;

  // Alice's session: two turns, then the second prompt regenerated (nodes 1-5, path 1,2,3,5), its run
  // finished.
  const created = await a.api.post('/v1/sessions', {
    model: 'mock:echo',
    userId: 'alice',
    title: 'alice private',
    metadata: { owner: 'alice' },
    idleShutdownAfterMs: 86_400_000,
  });
  expect(created.status).toBe(201);
  const id: string = created.body.id;
  expect((await a.api.post(`/v1/sessions/${id}/prompt`, { content: 'first words', wait: true })).status).toBe(
    200,
  );
  expect(
    (await a.api.post(`/v1/sessions/${id}/prompt`, { content: 'second words', wait: true })).status,
  ).toBe(200);
  const branched = await a.api.post(`/v1/sessions/${id}/branch`, { nodeId: 3 });
  expect(branched.status).toBe(202);
  const runId: string = branched.body.runId;
  await eventually(async () => expect((await a.api.get(`/v1/runs/${runId}`)).body.status).toBe('completed'));
  // A's own key for openai (never visible to anyone else).
  expect(
    (await a.api.request('PUT', '/v1/providers/openai', { apiKey: 'sk-secret-of-tenant-a' })).status,
  ).toBe(200);
  // A's webhook endpoint (a closed local port: every attempt fails) and one of its deliveries.
  const webhook = await a.api.post('/v1/webhooks', {
    url: 'http://127.0.0.1:9/hook',
    events: ['session.created'],
  });
  expect(webhook.status).toBe(201);
  await a.api.post('/v1/sessions', { model: 'mock:echo', title: 'for a delivery' });
  let deliveryId = '';
  await eventually(async () => {
    const deliveries = await a.api.get(`/v1/webhooks/${webhook.body.id}/deliveries`);
    deliveryId = deliveries.body.data[0]?.id;
    expect(deliveryId).toBeTruthy();
  });
  // A's MCP server (disabled: never connected to), with its headers and alice's own.
  const mcpServer = await a.api.post('/v1/mcp-servers', {
    name: 'a-tools',
    url: 'https://93.184.215.14/mcp',
    headers: { Authorization: 'Bearer mcp-secret-of-tenant-a' },
    enabled: false,
  });
  expect(mcpServer.status).toBe(201);
  const alicesMcp = `/v1/users/alice/mcp-servers/${mcpServer.body.id}/credentials`;
  expect(
    (await a.api.request('PUT', alicesMcp, { headers: { Authorization: 'Bearer mcp-secret-of-tenant-a' } }))
      .status,
  ).toBe(200);
  // Another session of alice's, busy for the whole file, with a prompt waiting in its queue.
  const queueSession = (
    await a.api.post('/v1/sessions', { model: 'mock:echo', userId: 'alice', opts: { delayMs: 600_000 } })
  ).body.id as string;
  expect((await a.api.post(`/v1/sessions/${queueSession}/prompt`, { content: 'busy' })).status).toBe(202);
  const waiting = await a.api.post(`/v1/sessions/${queueSession}/prompt`, {
    content: 'later',
    ifBusy: 'enqueue',
  });
  expect(waiting.body).toEqual({ runId: expect.any(String), queued: true });
  // A's settings: a default context policy (its sessions created from now on take it).
  expect(
    (
      await a.api.request('PUT', '/v1/settings', {
        context: { strategy: 'summarize', summaryPrompt: 'prompt-of-tenant-a' },
      })
    ).status,
  ).toBe(200);
  // Alice shares her session and rates its first reply.
  const alice = new Api(t.url, aliceToken);
  const share = await alice.post(`/v1/sessions/${id}/shares`, {});
  expect(share.status).toBe(201);
  expect((await alice.request('PUT', `/v1/sessions/${id}/nodes/2/feedback`, { rating: 'up' })).status).toBe(
    200,
  );
  // Alice's chat over the AI SDK's protocol, its reply streamed to the end.
  const chatId = `chat-of-alice-${Date.now()}`;
  const chat = await fetch(`${t.url}/v1/ui/chat`, {
    method: 'POST',
    headers: { authorization: `Bearer ${aliceToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      id: chatId,
      trigger: 'submit-message',
      model: 'mock:echo',
      messages: [{ id: 'm1', role: 'user', parts: [{ type: 'text', text: 'chat words' }] }],
    }),
  });
  expect(chat.status).toBe(200);
  expect(await chat.text()).toContain('data: [DONE]');
  // Her thread over AG-UI, run to its end.
  const threadId = `thread-of-alice-${Date.now()}`;
  const thread = await fetch(`${t.url}/v1/ag-ui`, {
    method: 'POST',
    headers: { authorization: `Bearer ${aliceToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      threadId,
      runId: 'r0',
      messages: [{ id: 'm0', role: 'user', content: 'thread words' }],
      forwardedProps: { model: 'mock:echo' },
    }),
  });
  expect(thread.status).toBe(200);
  expect(await thread.text()).toContain('RUN_FINISHED');
  // Alice's file, and a signed URL of it.
  const file = await fetch(`${t.url}/v1/files?name=alice.txt`, {
    method: 'POST',
    headers: { authorization: `Bearer ${aliceToken}`, 'content-type': 'text/plain' },
    body: 'a file of alice',
  });
  expect(file.status).toBe(201);
  const fileId = ((await file.json()) as { id: string }).id;
  const signed = await new Api(t.url, aliceToken).post(`/v1/files/${fileId}/url`, {});
  expect(signed.status).toBe(200);
  ids = {
    id,
    nodeId: 3,
    runId,
    tenantId: a.tenantId,
    keyId: second.body.id,
    webhookId: webhook.body.id,
    deliveryId,
    mcpServerId: mcpServer.body.id,
    userId: 'alice',
    provider: 'openai',
    queueId: waiting.body.runId,
    queueSession,
    fileId,
    signedQuery: (signed.body.url as string).split('?')[1]!,
    shareId: share.body.id,
    token: share.body.token,
    chatId,
    threadId,
  };

  const tree = await a.api.get(`/v1/sessions/${id}/tree`);
  expect(tree.body.nodes).toHaveLength(5);
  expect(tree.body.path).toEqual([1, 2, 3, 5]);

  operations = operationsOf(await fetchOpenApi(t.url));
});

afterAll(async () => {
  await t?.close();
});

describe('the route table', () => {
  it('knows exactly the /v1 routes of the OpenAPI document', () => {
    expect(operations.length).toBeGreaterThan(20);
    expect(operations.map((op) => op.key).sort()).toEqual(Object.keys(ROUTES).sort());
  });

  it('gives the owner 2xx on every read route with these ids (so the 404s below hide something real)', async () => {
    const failures: string[] = [];
    const reads = operations.filter((op) => op.method === 'GET' && specOf(op).kind !== 'websocket');
    for (const op of reads) {
      const kind = specOf(op).kind;
      const credential =
        kind === 'admin'
          ? TEST_ADMIN_KEY
          : ['activity', 'stats', 'tenantOwned', 'operator', 'modelStats'].includes(kind)
            ? a.key
            : aliceToken;
      const res = await callAs(op, credential);
      if (res.status !== 200) failures.push(`${op.key}: ${res.status} ${describeBody(res)}`);
    }
    expect(failures).toEqual([]);
    expect(reads.length).toBeGreaterThanOrEqual(15);
    // Nothing of alice's chat runs any more (a read starts nothing; her chat's stream was read to its end).
    expect((await a.api.get(`/v1/sessions/${ids.chatId}`)).body.status).toBe('idle');
    expect((await a.api.get(`/v1/sessions/${ids.threadId}`)).body.status).toBe('idle');
    // The event stream just aborted held a controller; wait until it is gone before the snapshot.
    await eventually(async () =>
      expect((await a.api.get(`/v1/sessions/${ids.id}`)).body.live).toEqual({ controllers: 0, observers: 0 }),
    );
    before = await snapshotOfA();
    const listed = await a.api.get('/v1/sessions?limit=100');
    idsOfA = new Set(idsIn(listed.body));
    expect(idsOfA.has(ids.id)).toBe(true);
    // B's requests name a chat and a thread of these ids of B's own (created on first use): B's listings may hold
    // those.
    expect(idsOfA.delete(ids.chatId)).toBe(true);
    expect(idsOfA.delete(ids.threadId)).toBe(true);
  });
});

describe('every route, generated from the OpenAPI document', () => {
  it.each<[string, Who]>([
    ["tenant B's API key", 'otherTenant'],
    ['a user token of another user of tenant A', 'otherUser'],
    ['the admin key (no tenant)', 'admin'],
  ])(
    'with %s: no route reveals or touches tenant A’s session (not_found, or forbidden for no tenant)',
    async (_, who) => {
      const credential = credentials()[who];
      const failures: string[] = [];
      let cases = 0;
      for (const op of operations) {
        const spec = specOf(op);
        if (['admin', 'websocket', 'mcp', 'signedFile'].includes(spec.kind)) continue;
        for (const viaQuery of spec.queryToken ? [false, true] : [false]) {
          const res = await callAs(op, credential, viaQuery);
          cases++;
          const problem = verdict(spec.kind, who, res, op.path);
          if (problem) failures.push(`${op.key}${viaQuery ? ' (?token=)' : ''}: ${problem}`);
        }
      }
      expect(failures).toEqual([]);
      expect(cases).toBeGreaterThanOrEqual(27);
    },
  );

  it('admin routes answer forbidden to tenant keys and user tokens, tenant A’s own included', async () => {
    const failures: string[] = [];
    const adminRoutes = operations.filter((op) => specOf(op).kind === 'admin');
    const callers = { 'A key': a.key, 'B key': b.key, alice: aliceToken, mallory: malloryToken };
    for (const op of adminRoutes) {
      for (const [name, credential] of Object.entries(callers)) {
        const problem = errorMismatch(await callAs(op, credential), 403, 'forbidden');
        if (problem) failures.push(`${op.key} as ${name}: ${problem}`);
      }
    }
    expect(failures).toEqual([]);
    expect(adminRoutes).toHaveLength(9);
    // The key the DELETE named is still valid.
    expect((await new Api(t.url, secondKeyOfA).get('/v1/sessions')).status).toBe(200);
  });

  it('a chat id is per tenant: B has a chat of its own of that id, alice’s is untouched', async () => {
    const bChat = await b.api.get(`/v1/ui/chat/${ids.chatId}/messages`);
    expect(bChat.status).toBe(200);
    const texts = JSON.stringify(bChat.body);
    expect(texts).toContain('pwned');
    expect(texts).not.toContain('chat words');
    expect((await b.api.get(`/v1/sessions/${ids.chatId}`)).body.userId).toBeNull();
    const aChat = await a.api.get(`/v1/ui/chat/${ids.chatId}/messages`);
    expect(JSON.stringify(aChat.body)).not.toContain('pwned');
    const bThread = await b.api.get(`/v1/ui/chat/${ids.threadId}/messages`);
    expect(JSON.stringify(bThread.body)).not.toContain('thread words');
  });

  it('a user token cannot mint tokens, for itself or anyone', async () => {
    for (const token of [aliceToken, malloryToken]) {
      for (const userId of ['alice', 'mallory', 'root']) {
        const res = await call(t.url, 'POST', '/v1/tokens', { credential: token, body: { userId } });
        expect(errorMismatch(res, 403, 'forbidden')).toBeNull();
      }
    }
  });

  it('an explicit id is per tenant: B gets a session of its own; mallory gets already_exists and nothing else', async () => {
    const copy = await b.api.post('/v1/sessions', { id: ids.id, model: 'mock:echo', title: 'B copy' });
    expect(copy.status).toBe(201);
    expect((await b.api.get(`/v1/sessions/${ids.id}`)).body.title).toBe('B copy');
    expect((await b.api.get(`/v1/sessions/${ids.id}/tree`)).body.nodes).toEqual([]);
    const taken = await call(t.url, 'POST', '/v1/sessions', {
      credential: malloryToken,
      body: { id: ids.id, model: 'mock:echo', title: 'mine now' },
    });
    expect(errorMismatch(taken, 409, 'already_exists')).toBeNull();
    // B deleting its copy leaves A's alone.
    expect((await b.api.delete(`/v1/sessions/${ids.id}`)).status).toBe(204);
    expect((await a.api.get(`/v1/sessions/${ids.id}`)).body.title).toBe('alice private');
  });
});

describe('the WebSocket endpoint', () => {
  const commands = (): Array<[string, Record<string, unknown>]> => [
    ['subscribe', { sessionId: ids.id }],
    ['subscribe', { sessionId: ids.id, mode: 'observer', after: 0 }],
    ['prompt', { sessionId: ids.id, content: 'pwned', wait: true }],
    ['branch', { sessionId: ids.id, nodeId: ids.nodeId }],
    ['navigate', { sessionId: ids.id, nodeId: ids.nodeId + 1 }],
    ['cancel', { sessionId: ids.id }],
    ['resume', { sessionId: ids.id, decision: { type: 'execute' } }],
  ];

  it.each<[string, 'header' | 'query', () => string]>([
    ["tenant B's key in the Authorization header", 'header', () => b.key],
    ["mallory's token as ?token=", 'query', () => malloryToken],
  ])(
    'answers every frame about A’s session with not_found, sending no events (%s)',
    async (_, how, credential) => {
      const ws =
        how === 'header'
          ? await WsClient.connect(wsUrl(t.url), { authorization: `Bearer ${credential()}` })
          : await WsClient.connect(wsUrl(t.url, credential()));
      try {
        for (const [op, body] of commands()) {
          const reply = await ws.request(op, body);
          expect({ op, ok: reply.ok, code: reply.error?.code }).toEqual({ op, ok: false, code: 'not_found' });
        }
        expect(ws.events()).toEqual([]);
        const activity = await ws.request('activity');
        if (how === 'query') expect(activity.error?.code).toBe('forbidden');
        else expect(activity.ok).toBe(true);
      } finally {
        await ws.close();
      }
    },
  );

  it("B's activity feed (SSE and WebSocket) carries nothing of A's work", async () => {
    const scratch = await a.api.post('/v1/sessions', { model: 'mock:echo', title: 'scratch' });
    const feedA = await SseReader.open(`${t.url}/v1/activity`, { authorization: `Bearer ${a.key}` });
    const feedB = await SseReader.open(`${t.url}/v1/activity?token=${encodeURIComponent(b.key)}`);
    const wsB = await WsClient.connect(wsUrl(t.url, b.key));
    try {
      expect([feedA.status, feedB.status]).toEqual([200, 200]);
      expect((await wsB.request('activity')).ok).toBe(true);
      expect(
        (await a.api.post(`/v1/sessions/${scratch.body.id}/prompt`, { content: 'busy', wait: true })).status,
      ).toBe(200);
      await feedA.waitFor((e) => e.event === 'run_finished' && e.data.id === scratch.body.id);
      expect(
        feedB.events.filter((e) => e.data?.tenantId === a.tenantId || e.data?.id === scratch.body.id),
      ).toEqual([]);
      expect(wsB.frames.filter((f) => f.type === 'activity')).toEqual([]);
    } finally {
      feedA.close();
      feedB.close();
      await wsB.close();
    }
  });
});

describe('after all of it', () => {
  it("tenant A's session reads byte for byte as before (tree, path, title, status, run, live entry, list)", async () => {
    expect(before).toBeDefined();
    // Mallory's own sessions (continued from alice's link) are not A's session: the tenant's search would list them.
    for (const id of forksOfMallory)
      expect((await call(t.url, 'DELETE', `/v1/sessions/${id}`, { credential: malloryToken })).status).toBe(
        204,
      );
    await eventually(async () => expect(await snapshotOfA()).toBe(before));
  });

  it("alice's own token sees and drives her session", async () => {
    const alice = new Api(t.url, aliceToken);
    const session = await alice.get(`/v1/sessions/${ids.id}`);
    expect(session.status).toBe(200);
    expect(session.body).toMatchObject({
      id: ids.id,
      userId: 'alice',
      title: 'alice private',
      path: [1, 2, 3, 5],
    });
    expect((await alice.get(`/v1/runs/${ids.runId}`)).body.status).toBe('completed');

    const ws = await WsClient.connect(wsUrl(t.url, aliceToken));
    try {
      expect((await ws.request('subscribe', { sessionId: ids.id })).ok).toBe(true);
      const answer = await alice.post(`/v1/sessions/${ids.id}/prompt`, { content: 'still mine', wait: true });
      expect(answer.status).toBe(200);
      expect(answer.body.finalResponse).toBe('Echo: still mine');
      await ws.waitForEvent((e) => e.event === 'store' && e.sessionId === ids.id);
    } finally {
      await ws.close();
    }
    const navigated = await alice.post(`/v1/sessions/${ids.id}/navigate`, { nodeId: 4 });
    expect(navigated.status).toBe(200);
    expect(navigated.body.path).toEqual([1, 2, 3, 4]);
    expect((await alice.patch(`/v1/sessions/${ids.id}`, { title: 'renamed by alice' })).body.title).toBe(
      'renamed by alice',
    );
    expect((await a.api.get(`/v1/sessions/${ids.id}/tree`)).body.nodes).toHaveLength(7);
  });

  it('a user token lists only its own sessions: never those of user null or of other users', async () => {
    const tenantOwned = await a.api.post('/v1/sessions', { model: 'mock:echo', title: 'no user' });
    const bobs = await a.api.post('/v1/sessions', {
      model: 'mock:echo',
      userId: 'bob',
      metadata: { owner: 'alice' },
    });
    const alices = await a.api.post('/v1/sessions', { model: 'mock:echo', userId: 'alice' });
    expect([tenantOwned.status, bobs.status, alices.status]).toEqual([201, 201, 201]);
    expect(tenantOwned.body.userId).toBeNull();

    const everything = await a.api.get('/v1/sessions?limit=100');
    const allIds = idsIn(everything.body);
    expect(allIds).toEqual(
      expect.arrayContaining([tenantOwned.body.id, bobs.body.id, alices.body.id, ids.id]),
    );

    const alice = new Api(t.url, aliceToken);
    for (const query of ['', '?userId=bob', '?metadata.owner=alice', '?live=false', '?live=true']) {
      const seen: Array<{ id: string; userId: string | null }> = [];
      let cursor: string | null = null;
      do {
        const sep: string = query ? '&' : '?';
        const page: { status: number; body: { data: typeof seen; nextCursor: string | null } } =
          await alice.get(
            `/v1/sessions${query}${sep}limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          );
        expect(page.status).toBe(200);
        seen.push(...page.body.data);
        cursor = page.body.nextCursor;
      } while (cursor);
      expect(seen.filter((s) => s.userId !== 'alice')).toEqual([]);
    }
    const listed = idsIn((await alice.get('/v1/sessions?limit=100')).body);
    expect(listed).toEqual(expect.arrayContaining([ids.id, alices.body.id]));
    for (const foreign of [tenantOwned.body.id, bobs.body.id]) {
      expect(
        errorMismatch(
          await call(t.url, 'GET', `/v1/sessions/${foreign}`, { credential: aliceToken }),
          404,
          'not_found',
        ),
      ).toBeNull();
    }
    const live = await alice.get('/v1/live');
    expect((live.body as Listing).data.filter((e) => e.userId !== 'alice')).toEqual([]);
  });
});

describe('revoked keys', () => {
  it('answer 401 on every route once DELETE /v1/admin/keys/:keyId revoked them, and on the WebSocket', async () => {
    const key = new Api(t.url, secondKeyOfA);
    expect((await key.get(`/v1/sessions/${ids.id}`)).status).toBe(200);
    // User tokens name the key that minted them: revoking it ends them too (one of the other key lives on).
    const minted = (await key.post('/v1/tokens', { userId: 'revoked-key-user' })).body.token as string;
    const other = (await a.api.post('/v1/tokens', { userId: 'revoked-key-user' })).body.token as string;
    expect((await new Api(t.url, minted).get('/v1/sessions')).status).toBe(200);
    expect((await admin.delete(`/v1/admin/keys/${ids.keyId}`)).status).toBe(204);
    expect(
      errorMismatch(await call(t.url, 'GET', '/v1/sessions', { credential: minted }), 401, 'unauthorized'),
    ).toBeNull();
    expect((await new Api(t.url, other).get('/v1/sessions')).status).toBe(200);

    const failures: string[] = [];
    let cases = 0;
    for (const op of operations) {
      const spec = specOf(op);
      // A shared link and a signed file URL take no credential: a revoked one changes nothing there.
      if (spec.kind === 'websocket' || spec.kind === 'sharedLink' || spec.kind === 'signedFile') continue;
      for (const viaQuery of spec.queryToken ? [false, true] : [false]) {
        cases++;
        const problem = errorMismatch(await callAs(op, secondKeyOfA, viaQuery), 401, 'unauthorized');
        if (problem) failures.push(`${op.key}${viaQuery ? ' (?token=)' : ''}: ${problem}`);
      }
    }
    expect(failures).toEqual([]);
    expect(cases).toBeGreaterThanOrEqual(30);

    const ws = await WsClient.connect(wsUrl(t.url, secondKeyOfA));
    expect((await ws.closed).code).toBe(1008);
    expect(ws.frames).toEqual([
      { type: 'error', error: { code: 'unauthorized', message: expect.any(String) } },
    ]);

    // Revoking is idempotent; the tenant's other key is untouched; an unknown key is not_found.
    expect((await admin.delete(`/v1/admin/keys/${ids.keyId}`)).status).toBe(204);
    expect((await a.api.get(`/v1/sessions/${ids.id}`)).status).toBe(200);
    const unknown = await call(t.url, 'DELETE', '/v1/admin/keys/00000000-0000-4000-8000-000000000000', {
      credential: TEST_ADMIN_KEY,
    });
    expect(errorMismatch(unknown, 404, 'not_found')).toBeNull();
  });
});
