// The registry of server tools (registered in code at start-up) and the JSON Schemas the model sees, with the
// source of the tools a run adds to them (a tenant's MCP servers' tools, which only exist for its sessions that
// enable those servers).

import { z } from 'zod';
import type { ClientTool, Scope } from '@canopy/core';
import type { ModelToolSpec } from '../model/model-gateway.port';
import type { ServerTool } from './server-tool';

const NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

/** The run a source is asked for its tools. */
export interface RunToolsRequest {
  /** Who acts the run's first turn. */
  scope: Scope;
  sessionId: string;
  runId: string;
  opts: Record<string, unknown>;
}

/** Tools a run has besides the registered ones, by the name the model sees (never a registered tool's name). */
export interface RunToolSource {
  toolsFor(request: RunToolsRequest): Promise<ServerTool<unknown>[]>;
  /** The names sessions of the tenant may enable the source's tools by (its MCP servers' names). */
  serverNames(tenantId: string): Promise<ReadonlySet<string>>;
}

export class ToolRegistry {
  private readonly tools = new Map<string, ServerTool<unknown>>();
  private source: RunToolSource | null = null;

  /** Sets where runs get the tools they add (a tenant's MCP servers). */
  useSource(source: RunToolSource): this {
    this.source = source;
    return this;
  }

  /** The tenant's MCP servers a session may name in opts.mcpServers (none without a source). */
  mcpServerNames(tenantId: string): Promise<ReadonlySet<string>> {
    return this.source ? this.source.serverNames(tenantId) : Promise.resolve(new Set());
  }

  /** The tools a run adds to the registered ones (none without a source). */
  async runTools(request: RunToolsRequest): Promise<ServerTool<unknown>[]> {
    if (!this.source) return [];
    return (await this.source.toolsFor(request)).filter((t) => !this.tools.has(t.name));
  }

  register<I>(tool: ServerTool<I>): this {
    if (!NAME.test(tool.name)) throw new Error(`invalid tool name "${tool.name}"`);
    if (this.tools.has(tool.name)) throw new Error(`tool "${tool.name}" is registered twice`);
    this.tools.set(tool.name, tool);
    return this;
  }

  get(name: string): ServerTool<unknown> | undefined {
    return this.tools.get(name);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  names(): string[] {
    return [...this.tools.keys()].sort();
  }

  /** The model-facing description of a registered tool. */
  /** What a session's model calls are sent of its tools: its enabled server tools registered here, then its client tools. */
  specsFor(
    serverTools: readonly string[],
    clientTools: readonly ClientTool[],
    runTools: readonly ServerTool<unknown>[] = [],
  ): ModelToolSpec[] {
    const specs = serverTools.filter((n) => this.has(n)).map((n) => this.spec(n));
    for (const t of runTools) specs.push(specOf(t));
    for (const t of clientTools)
      specs.push({ name: t.name, description: t.description, inputSchema: t.inputSchema });
    return specs;
  }

  spec(name: string): ModelToolSpec {
    const tool = this.tools.get(name);
    if (!tool) throw new Error(`unknown server tool "${name}"`);
    return specOf(tool);
  }
}

function specOf(tool: ServerTool<unknown>): ModelToolSpec {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.inputSchema ?? jsonSchemaOf(tool.input),
  };
}

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { target: 'draft-7', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  return json;
}
