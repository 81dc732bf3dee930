// Connected MCP clients, pooled per (process, tenant, server, credential): one client for the same server settings
// and headers, shared by the runs that need it and closed once unused for MCP_IDLE_CLOSE_MS. A client speaks the
// Streamable HTTP transport, negotiating the protocol version through the SDK; a server that refuses it (the older
// HTTP+SSE transport only) is tried again over SSE. Every request goes through the SSRF guard's fetch, so a URL
// that resolves to a refused address is never connected to. The tools a client listed are kept and listed again
// when the server says they changed (notifications/tools/list_changed).

import { createHash } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { targetRefusalIn } from '@canopy/common';
import type { McpToolInfo } from '@canopy/core';
import type { McpCallResult } from './mcp-result';

/** Who is talked to, with which headers. */
export interface McpTarget {
  tenantId: string;
  serverId: string;
  name: string;
  url: string;
  headers: Record<string, string>;
  /** Versions the server's settings (a client of older settings is not reused). */
  version: string;
}

export interface McpCallOptions {
  signal: AbortSignal;
  timeoutMs: number;
  meta: Record<string, unknown>;
  onProgress(progress: { progress: number; total?: number; message?: string }): void;
}

export interface McpPoolOptions {
  fetch: typeof globalThis.fetch;
  connectTimeoutMs: number;
  idleCloseMs: number;
  clientVersion: string;
  /** What a client saw of its server: the tools it listed, or the error it met. */
  onState(target: McpTarget, state: { tools?: McpToolInfo[]; error: string | null }): void;
}

interface Pooled {
  client: Client;
  tools: McpToolInfo[] | null;
  inUse: number;
  idle: NodeJS.Timeout | null;
  closed: boolean;
}

export class McpClientPool {
  private readonly clients = new Map<string, Promise<Pooled>>();

  constructor(private readonly options: McpPoolOptions) {}

  /** The tools the server lists (kept from the last listing, refreshed on list_changed). */
  async listTools(target: McpTarget, timeoutMs = this.options.connectTimeoutMs): Promise<McpToolInfo[]> {
    return this.using(target, timeoutMs, async (pooled) => {
      if (pooled.tools) return pooled.tools;
      pooled.tools = await this.list(pooled.client, timeoutMs);
      this.options.onState(target, { tools: pooled.tools, error: null });
      return pooled.tools;
    });
  }

  /** tools/call: the run's signal cancels it (notifications/cancelled), progress comes back as it is sent. */
  async callTool(
    target: McpTarget,
    tool: string,
    args: Record<string, unknown>,
    options: McpCallOptions,
  ): Promise<McpCallResult> {
    return this.using(
      target,
      options.timeoutMs,
      async (pooled) => {
        const result = (await pooled.client.callTool(
          { name: tool, arguments: args, _meta: options.meta },
          undefined,
          {
            signal: options.signal,
            // Canopy's own per-call timeout decides; the SDK's is only a backstop behind it.
            timeout: options.timeoutMs + 1_000,
            onprogress: (progress) => options.onProgress(progress),
          },
        )) as McpCallResult;
        return result;
      },
      options.signal,
    );
  }

  /** Nest's shutdown hook: the process is stopping. */
  onModuleDestroy(): Promise<void> {
    return this.close();
  }

  /** Closes every client (the process is stopping). */
  async close(): Promise<void> {
    const all = [...this.clients.values()];
    this.clients.clear();
    await Promise.all(
      all.map((p) =>
        p.then(
          (c) => this.shut(c),
          () => undefined,
        ),
      ),
    );
  }

  /** How many clients are open (for tests). */
  get size(): number {
    return this.clients.size;
  }

  private async using<T>(
    target: McpTarget,
    timeoutMs: number,
    fn: (pooled: Pooled) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    const key = poolKey(target);
    let pending = this.clients.get(key);
    if (!pending) {
      const connecting = this.connect(target, key, timeoutMs);
      pending = connecting;
      this.clients.set(key, connecting);
      connecting.catch((err: unknown) => {
        if (this.clients.get(key) === connecting) this.clients.delete(key);
        this.options.onState(target, { error: mcpErrorText(err) });
      });
    }
    const pooled = await pending;
    pooled.inUse++;
    if (pooled.idle) clearTimeout(pooled.idle);
    pooled.idle = null;
    let failed = false;
    try {
      return await fn(pooled);
    } catch (err) {
      // A failed transport (not an error the server answered, nor a cancel): the next call connects again.
      if (!signal?.aborted && !isServerAnswer(err)) {
        failed = true;
        if (this.clients.get(key) === pending) this.clients.delete(key);
        this.options.onState(target, { error: mcpErrorText(err) });
      }
      throw err;
    } finally {
      pooled.inUse--;
      if (failed) {
        if (pooled.inUse === 0) void this.shut(pooled);
      } else if (!pooled.closed && pooled.inUse === 0) {
        pooled.idle = setTimeout(() => {
          if (pooled.inUse > 0) return;
          if (this.clients.get(key) === pending) this.clients.delete(key);
          void this.shut(pooled);
        }, this.options.idleCloseMs);
        pooled.idle.unref();
      }
    }
  }

  private async connect(target: McpTarget, key: string, timeoutMs: number): Promise<Pooled> {
    const url = new URL(target.url);
    const requestInit = { headers: target.headers };
    const pooled: Pooled = {
      client: null as unknown as Client,
      tools: null,
      inUse: 0,
      idle: null,
      closed: false,
    };
    const client = (): Client => {
      const c = new Client(
        { name: 'canopy', version: this.options.clientVersion },
        {
          listChanged: {
            tools: {
              autoRefresh: true,
              onChanged: (error, tools) => {
                if (error) return this.options.onState(target, { error: mcpErrorText(error) });
                pooled.tools = (tools ?? []).map(toolInfo);
                this.options.onState(target, { tools: pooled.tools, error: null });
              },
            },
          },
        },
      );
      c.onclose = () => {
        // Only the client pooled: the Streamable HTTP one closed before the SSE fallback must not mark the pooled
        // entry closed nor drop it from the pool (its SSE client would then never be reused, nor ever closed).
        if (pooled.client !== c) return;
        pooled.closed = true;
        if (pooled.idle) clearTimeout(pooled.idle);
        const current = this.clients.get(key);
        void current?.then(
          (p) => p === pooled && this.clients.delete(key),
          () => undefined,
        );
      };
      return c;
    };
    const signal = AbortSignal.timeout(timeoutMs);
    const first = client();
    try {
      await first.connect(
        new StreamableHTTPClientTransport(url, { fetch: this.options.fetch, requestInit }),
        { signal, timeout: timeoutMs },
      );
      pooled.client = first;
      return pooled;
    } catch (err) {
      await first.close().catch(() => undefined);
      // Refused by the guard, or out of time: no other transport would do better.
      if (targetRefusalIn(err) || signal.aborted) throw err;
    }
    // The server may speak only the older HTTP+SSE transport.
    const second = client();
    try {
      await second.connect(new SSEClientTransport(url, { fetch: this.options.fetch, requestInit }), {
        signal,
        timeout: timeoutMs,
      });
    } catch (err) {
      // Closed, or its EventSource goes on reconnecting to a server that is down (every 3 s, for ever).
      await second.close().catch(() => undefined);
      throw err;
    }
    pooled.client = second;
    return pooled;
  }

  private async list(client: Client, timeoutMs: number): Promise<McpToolInfo[]> {
    const tools: McpToolInfo[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 20; page++) {
      const result = await client.listTools(cursor ? { cursor } : undefined, { timeout: timeoutMs });
      tools.push(...result.tools.map(toolInfo));
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  private async shut(pooled: Pooled): Promise<void> {
    pooled.closed = true;
    if (pooled.idle) clearTimeout(pooled.idle);
    await pooled.client?.close().catch(() => undefined);
  }
}

function toolInfo(tool: Tool): McpToolInfo {
  return {
    name: tool.name,
    description: tool.description ?? null,
    inputSchema: tool.inputSchema,
  };
}

/** One client per tenant, server, settings and credential (the headers, hashed: never kept in a key). */
function poolKey(target: McpTarget): string {
  const credential = createHash('sha256').update(JSON.stringify(target.headers)).digest('base64url');
  return `${target.tenantId}:${target.serverId}:${target.version}:${credential}`;
}

/** An error the server answered (JSON-RPC): the connection itself is fine. */
function isServerAnswer(err: unknown): boolean {
  return (
    err instanceof McpError &&
    err.code !== (ErrorCode.ConnectionClosed as number) &&
    err.code !== (ErrorCode.RequestTimeout as number)
  );
}

/** What went wrong, in words for the model and the server's state (a refusal says only that it was refused). */
export function mcpErrorText(err: unknown): string {
  const refused = targetRefusalIn(err);
  if (refused) return refused.message;
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
  return `${message}${cause}`.slice(0, 500);
}
