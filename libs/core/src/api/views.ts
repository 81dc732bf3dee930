// Answers of the API that the service builds and the SDK reads, shared so the two cannot drift: a live session
// as the registry knows it, the run statistics of dashboards, the models a deployment offers and its tenants.

import type { RunError, SessionStatus } from '../events';
import type { ContextPolicy } from './schemas';

/** A live session across the deployment: the presences of every instance merged. */
export interface LiveEntry {
  tenantId: string;
  id: string;
  title: string | null;
  status: SessionStatus;
  userId: string | null;
  controllers: number;
  observers: number;
  /** ISO time the session became live (earliest presence). */
  since: string;
  where: { api: string[]; worker: string | null };
}

export interface MinuteStats {
  /** The minute's start (ISO 8601). */
  minute: string;
  started: number;
  finished: number;
  failed: number;
  /** Tokens of the runs that finished in the minute. */
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  /** Latency (request to end, pauses included) of the runs that finished in the minute; null when none did. */
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
}

/** Live sessions in one minute (the most seen at once), sampled by the api instance that answers. */
export interface LiveSample {
  minute: string;
  live: number;
  busy: number;
  paused: number;
}

/** A run of the window, newest first: what a dashboard's activity feed starts from. */
export interface RecentRun {
  runId: string;
  sessionId: string;
  sessionTitle: string | null;
  tenantId: string;
  tenantName: string;
  kind: string;
  status: string;
  createdAt: string;
  finishedAt: string | null;
  totalTokens: number;
  error: RunError | null;
}

export interface TenantUsage {
  tenantId: string;
  tenantName: string;
  /** Runs finished in the window. */
  runs: number;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  totalCost: number;
}

export interface RunStats {
  since: string;
  until: string;
  /** Minutes with any run started or finished, oldest first. */
  perMinute: MinuteStats[];
  /** Tenants with runs finished in the window, most tokens first (at most 100). */
  usageByTenant: TenantUsage[];
  /**
   * Live sessions per minute over the window, as far as the answering api instance has watched (it samples the
   * live registry while it runs; nothing is stored): oldest first.
   */
  liveSessions: LiveSample[];
  /** The latest runs of the window (at most 50), newest first, with their sessions' titles. */
  recentRuns: RecentRun[];
}

/** A model the deployment offers (GET /v1/models). */
export interface ModelInfo {
  /** What a session's `model` takes: "provider:name". */
  id: string;
  provider: string;
  name: string;
  /** Whether the model is called with tools (client tools, server tools). */
  tools: boolean;
  /**
   * Tokens the model takes in, prompt and reply together; null when unknown (a mock's comes from the session's
   * `opts.contextWindow`).
   */
  contextWindow: number | null;
  /** Tokens the model gives out in one reply at most; null when unknown (a mock's: `opts.maxOutputTokens`). */
  maxOutputTokens: number | null;
  description: string | null;
}

/** The summary of a conversation's path up to a node (context policy `summarize`), sent in place of those turns. */
export interface ContextSummary {
  /** The last node it covers. */
  throughNodeId: number;
  text: string;
  /** Its tokens as the session's model counts them. */
  tokens: number;
}

/** What the next run from a node would send (GET /v1/sessions/:id/context). */
export interface ContextView {
  nodeId: number | null;
  strategy: ContextPolicy['strategy'];
  /** The model's context window; null when unknown (then everything is sent). */
  window: number | null;
  /** Tokens kept free for the reply; null when the window is unknown. */
  reserveOutputTokens: number | null;
  /** Tokens of the request: the system prompt, the tools' schemas and the messages sent. */
  tokens: number;
  /** Whether it fits the window less the reserve (a run that does not fit ends with context_length_exceeded). */
  fits: boolean;
  /** A summary standing in for the oldest turns; null when none does. */
  summary: ContextSummary | null;
  /** Messages of the path left out by the policy (the oldest whole turns). */
  dropped: number;
  /** The messages sent, oldest first, with their tokens. */
  messages: Array<{ nodeId: number; role: 'user' | 'assistant'; tokens: number }>;
}

/**
 * A server tool (GET /v1/tools): one registered on the deployment (sessions enable it in `opts.serverTools`), or one
 * of the tenant's MCP servers lists (`server` set; named `<server>__<tool>`; sessions enable it with its server in
 * `opts.mcpServers`).
 */
export interface ServerToolInfo {
  name: string;
  description: string;
  /** Pauses the run for a decision before it runs. */
  approval: boolean;
  /** JSON Schema of its input. */
  inputSchema: Record<string, unknown>;
  /** The MCP server it comes from. */
  server?: string;
}

/** A tool as an MCP server lists it (tools/list). */
export interface McpToolInfo {
  name: string;
  description: string | null;
  inputSchema: Record<string, unknown>;
}

/** A tenant's MCP server (GET /v1/mcp-servers/:id): its settings (never its headers' values) and its state. */
export interface McpServerView {
  id: string;
  name: string;
  url: string;
  /** The names of the headers it is sent (their values are never returned). */
  headerNames: string[];
  allowedTools: string[] | null;
  approval: 'never' | 'always' | Record<string, 'never' | 'always'>;
  enabled: boolean;
  timeoutMs: number | null;
  userCredentials: boolean;
  /** The tools it listed when last reached (null: never listed). */
  tools: McpToolInfo[] | null;
  lastReachedAt: string | null;
  lastError: string | null;
  createdAt: string;
  updatedAt: string;
}

/** An end user's credentials for an MCP server (never their values). */
export interface McpCredentialsView {
  serverId: string;
  userId: string;
  headerNames: string[];
  updatedAt: string;
}

/** A tenant as the admin lists them (GET /v1/admin/tenants). */
export interface TenantInfo {
  id: string;
  name: string;
  createdAt: string;
  /** A disabled tenant's credentials answer 403 tenant_disabled. */
  disabled?: boolean;
}
