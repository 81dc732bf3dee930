// A tenant's MCP servers as tools for its agents: a run of a session that enables servers (opts.mcpServers) gets
// each server's tools as server tools named `<server>__<tool>`, with the input schema the server lists and its
// approval policy. A call goes to the server (tools/call) through the pooled client with the run's cancel, a
// per-call timeout and progress as `tool_progress`; the acting scope and an idempotency key (run id + tool call id)
// go in its `_meta`. Whatever goes wrong (the server down, slow, or answering garbage; the user not connected) is an
// error result the model sees: the run goes on. A server that cannot be listed when the run starts offers the tools
// it listed when last reached.

import { z } from 'zod';
import { MCP_SERVER_NAME, type McpServerView, type Scope, type ServerToolInfo } from '@canopy/core';
import { currentTraceCarrier } from '@canopy/common';
import type { McpServerConfig, McpServersRepository } from '@canopy/tenancy';
import type { ServerTool } from '../tools/server-tool';
import type { RunToolSource, RunToolsRequest } from '../tools/tool-registry';
import { mcpErrorText, type McpClientPool, type McpTarget } from './mcp-client-pool';
import { modelToolName, needsApproval, toolOutputOf } from './mcp-result';
import type { McpToolInfo } from '@canopy/core';

/** An MCP tool takes any JSON object: the server validates its own input. */
const ANY_OBJECT = z.record(z.string(), z.unknown());

/** The MCP servers a session enables (opts.mcpServers, checked when saved). */
export function enabledMcpServers(opts: Record<string, unknown> | undefined): string[] {
  const names = opts?.mcpServers;
  return Array.isArray(names)
    ? names.filter((n): n is string => typeof n === 'string' && MCP_SERVER_NAME.test(n))
    : [];
}

export interface McpToolboxSettings {
  /** The per-call timeout of a server that sets none (TOOL_TIMEOUT_MS). */
  toolTimeoutMs: number;
}

interface ServerTarget {
  config: McpServerConfig;
  target: McpTarget;
  /** The end user the run acts for, and whether they connected this server (always true without user credentials). */
  user: string | null;
  connected: boolean;
}

export class McpToolbox implements RunToolSource {
  constructor(
    private readonly servers: McpServersRepository,
    private readonly pool: McpClientPool,
    private readonly settings: McpToolboxSettings,
  ) {}

  async toolsFor(request: RunToolsRequest): Promise<ServerTool<unknown>[]> {
    const names = enabledMcpServers(request.opts);
    if (names.length === 0) return [];
    const tenantId = request.scope.tenantId;
    const configs = (await this.servers.configs(tenantId, names)).filter((c) => c.enabled);
    if (configs.length === 0) return [];
    const user = configs.some((c) => c.userCredentials)
      ? await this.servers.sessionUser(tenantId, request.sessionId)
      : null;
    const perServer = await Promise.all(
      names
        .map((name) => configs.find((c) => c.name === name))
        .filter((c): c is McpServerConfig => c !== undefined)
        .map(async (config) => {
          const server = await this.targetOf(config, user);
          return (await this.toolsOf(server)).map((tool) => this.serverTool(server, tool));
        }),
    );
    const tools = new Map<string, ServerTool<unknown>>();
    for (const tool of perServer.flat()) if (!tools.has(tool.name)) tools.set(tool.name, tool);
    return [...tools.values()];
  }

  serverNames(tenantId: string): Promise<ReadonlySet<string>> {
    return this.servers.names(tenantId);
  }

  /** The tools of the tenant's enabled servers, as GET /v1/tools lists them. */
  async toolInfos(tenantId: string): Promise<ServerToolInfo[]> {
    const configs = (await this.servers.configs(tenantId)).filter((c) => c.enabled);
    const perServer = await Promise.all(
      configs.map(async (config) => {
        const server = await this.targetOf(config, null);
        return (await this.toolsOf(server)).map((tool) => ({
          name: modelToolName(config.name, tool.name),
          description: tool.description ?? tool.name,
          approval: needsApproval(config.approval, tool.name),
          inputSchema: tool.inputSchema,
          server: config.name,
        }));
      }),
    );
    return perServer.flat();
  }

  /** A server with its state as it is now: listed again when no client here holds its tools. */
  async describe(scope: Scope, id: string): Promise<McpServerView> {
    const config = await this.servers.config(scope.tenantId, id);
    if (config.enabled) {
      const server = await this.targetOf(config, null);
      try {
        const tools = await this.pool.listTools(server.target);
        await this.servers.recordState(scope.tenantId, id, { tools, error: null });
      } catch (err) {
        await this.servers.recordState(scope.tenantId, id, { error: mcpErrorText(err) });
      }
    }
    return this.servers.get(scope, id);
  }

  private async targetOf(config: McpServerConfig, user: string | null): Promise<ServerTarget> {
    const own =
      config.userCredentials && user
        ? await this.servers.userHeaders(config.tenantId, config.id, user)
        : null;
    return {
      config,
      target: {
        tenantId: config.tenantId,
        serverId: config.id,
        name: config.name,
        url: config.url,
        headers: { ...config.headers, ...own },
        version: config.version,
      },
      user,
      connected: !config.userCredentials || own !== null,
    };
  }

  /** The tools offered of a server: those it lists now (or listed when last reached), less those not allowed. */
  private async toolsOf(server: ServerTarget): Promise<McpToolInfo[]> {
    let tools: McpToolInfo[];
    try {
      tools = await this.pool.listTools(server.target);
    } catch {
      tools = server.config.tools ?? [];
    }
    const allowed = server.config.allowedTools;
    return allowed ? tools.filter((t) => allowed.includes(t.name)) : tools;
  }

  private serverTool(server: ServerTarget, tool: McpToolInfo): ServerTool<unknown> {
    const { config } = server;
    const timeoutMs = config.timeoutMs ?? this.settings.toolTimeoutMs;
    return {
      name: modelToolName(config.name, tool.name),
      description: tool.description ?? tool.name,
      input: ANY_OBJECT,
      inputSchema: tool.inputSchema,
      approval: needsApproval(config.approval, tool.name),
      timeoutMs,
      mcpServer: config.name,
      handler: async (input, turn) => {
        if (!server.connected) {
          return {
            content: server.user
              ? `the user "${server.user}" has not connected the MCP server "${config.name}": it acts on each user's behalf with their own credentials, and they have none`
              : `the MCP server "${config.name}" acts on each user's behalf with their own credentials, and this session has no user`,
            isError: true,
          };
        }
        try {
          const result = await this.pool.callTool(
            server.target,
            tool.name,
            input as Record<string, unknown>,
            {
              signal: turn.signal,
              timeoutMs,
              meta: {
                'canopy/tenantId': turn.scope.tenantId,
                'canopy/userId': turn.scope.userId ?? server.user,
                'canopy/sessionId': turn.sessionId,
                'canopy/runId': turn.runId,
                'canopy/idempotencyKey': `${turn.runId}:${turn.toolCallId}`,
                // The tool call's trace context, where MCP's OpenTelemetry conventions carry it (the request's
                // traceparent header says the same).
                ...currentTraceCarrier(),
              },
              onProgress: ({ progress, total, message }) =>
                turn.reportProgress({
                  progress,
                  ...(total !== undefined ? { total } : {}),
                  ...(message !== undefined ? { message } : {}),
                }),
            },
          );
          return toolOutputOf(result);
        } catch (err) {
          if (turn.signal.aborted) throw err;
          return { content: `the MCP server "${config.name}" failed: ${mcpErrorText(err)}`, isError: true };
        }
      },
    };
  }
}
