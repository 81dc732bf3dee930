// The registry of server tools (registered in code at start-up) and the JSON Schemas the model sees.

import { z } from 'zod';
import type { ClientTool } from '@canopy/core';
import type { ModelToolSpec } from '../model/model-gateway.port';
import type { ServerTool } from './server-tool';

const NAME = /^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/;

export class ToolRegistry {
  private readonly tools = new Map<string, ServerTool<unknown>>();

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
  specsFor(serverTools: readonly string[], clientTools: readonly ClientTool[]): ModelToolSpec[] {
    const specs = serverTools.filter((n) => this.has(n)).map((n) => this.spec(n));
    for (const t of clientTools)
      specs.push({ name: t.name, description: t.description, inputSchema: t.inputSchema });
    return specs;
  }

  spec(name: string): ModelToolSpec {
    const tool = this.tools.get(name);
    if (!tool) throw new Error(`unknown server tool "${name}"`);
    return { name: tool.name, description: tool.description, inputSchema: jsonSchemaOf(tool.input) };
  }
}

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { target: 'draft-7', unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  delete json.$schema;
  return json;
}
