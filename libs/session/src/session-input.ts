// Checks of what callers give the session engine, before anything is stored or started: the model names a known
// provider, client tools are declared once and do not clash with the session's server tools, a prompt has content
// and carries no tool results, and idle-only commands find the session idle. Each failure is a 4xx with the field.

import {
  contextPolicySchema,
  sessionMcpServersSchema,
  isTurnBoundary,
  toBlocks,
  type Block,
  type ClientTool,
  type MessageContent,
  type SessionInfo,
} from '@canopy/core';
import { CanopyException } from '@canopy/common';
import type { ModelCheckContext, ModelGateway, ToolRegistry } from '@canopy/agent';
import type { SessionEngineDeps } from './session-deps';

export function requireIdle(status: SessionInfo['status']): void {
  if (status === 'busy') throw new CanopyException('session_busy', 'a run is in flight');
  if (status === 'paused') throw new CanopyException('session_paused', 'a run is waiting for a decision');
}

export function checkModel(
  gateway: Pick<ModelGateway, 'check'>,
  model: string,
  context?: ModelCheckContext,
  field = 'model',
): void {
  const problem = gateway.check(model, context);
  if (problem) throw CanopyException.badRequest(problem, { field });
}

/**
 * What a model check needs to know of the tenant: the providers it brought its own key for, looked up only when
 * the deployment's own keys fall short for one of `models`.
 */
export async function modelContext(
  deps: Pick<SessionEngineDeps, 'gateway' | 'providerKeys'>,
  tenantId: string,
  models: Array<string | undefined>,
): Promise<ModelCheckContext | undefined> {
  const needed = models.some((m) => m !== undefined && deps.gateway.check(m) !== null);
  if (!needed || !deps.providerKeys) return undefined;
  return { tenantProviders: await deps.providerKeys.providersOf(tenantId) };
}

/** checkModel, with the tenant's own provider keys counted. */
export async function checkModelFor(
  deps: Pick<SessionEngineDeps, 'gateway' | 'providerKeys'>,
  tenantId: string,
  model: string,
  field = 'model',
): Promise<void> {
  checkModel(deps.gateway, model, await modelContext(deps, tenantId, [model]), field);
}

/** The model a session's context policy summarizes with, when it names one (`opts.context.summaryModel`). */
export function summaryModelOf(opts: Record<string, unknown> | undefined): string | undefined {
  const context = opts?.context;
  if (typeof context !== 'object' || context === null) return undefined;
  const model = (context as { summaryModel?: unknown }).summaryModel;
  return typeof model === 'string' ? model : undefined;
}

export function checkTools(
  registry: Pick<ToolRegistry, 'has'>,
  tools: ClientTool[],
  opts: Record<string, unknown> | undefined,
): void {
  const names = new Set<string>();
  for (const t of tools) {
    if (names.has(t.name))
      throw CanopyException.badRequest(`tool "${t.name}" is declared twice`, { field: 'tools' });
    names.add(t.name);
  }
  const server = opts?.serverTools;
  if (server === undefined) return;
  if (!Array.isArray(server) || !server.every((n) => typeof n === 'string')) {
    throw CanopyException.badRequest('opts.serverTools must be a list of tool names', {
      field: 'opts.serverTools',
    });
  }
  for (const name of server) {
    if (!registry.has(name)) {
      throw CanopyException.badRequest(`unknown server tool "${name}"`, { field: 'opts.serverTools' });
    }
    if (names.has(name)) {
      throw CanopyException.badRequest(`"${name}" is both a server tool and a client tool`, {
        field: 'tools',
      });
    }
  }
}

/** The server tools a session enables (`opts.serverTools`, checked when saved). */
export function enabledServerTools(opts: Record<string, unknown>): string[] {
  return Array.isArray(opts.serverTools)
    ? opts.serverTools.filter((n): n is string => typeof n === 'string')
    : [];
}

/** Longest mock delay (per word, or per script entry): 10 minutes, far inside Node's timer range (2^31 - 1 ms). */
export const MAX_MOCK_DELAY_MS = 600_000;

/**
 * The mock models' delays (`opts.delayMs`, `opts.script[i].delayMs`): whole milliseconds from 0 to
 * MAX_MOCK_DELAY_MS (a larger timer would overflow and fire at once).
 */
export function checkMockDelays(opts: Record<string, unknown> | undefined): void {
  const check = (value: unknown, field: string) => {
    if (value === undefined) return;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_MOCK_DELAY_MS) {
      throw CanopyException.badRequest(
        `${field} must be a whole number of ms from 0 to ${MAX_MOCK_DELAY_MS}`,
        {
          field,
        },
      );
    }
  };
  check(opts?.delayMs, 'opts.delayMs');
  const script = opts?.script;
  if (!Array.isArray(script)) return;
  script.forEach((entry, i) => {
    if (typeof entry === 'object' && entry !== null) {
      check((entry as { delayMs?: unknown }).delayMs, `opts.script.${i}.delayMs`);
    }
  });
}

/**
 * A session's options as far as Canopy reads them: the mock models' delays and windows, the context policy
 * (`opts.context`) and the names of its MCP servers (`opts.mcpServers`; that they exist: checkOptsFor). Anything else
 * in opts is passed to the model as it is.
 */
export function checkOpts(opts: Record<string, unknown> | undefined): void {
  checkMockDelays(opts);
  for (const field of ['contextWindow', 'maxOutputTokens'] as const) {
    const value = opts?.[field];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 100_000_000) {
      throw CanopyException.badRequest(
        `opts.${field} must be a whole number of tokens from 1 to 100,000,000`,
        {
          field: `opts.${field}`,
        },
      );
    }
  }
  if (opts?.mcpServers !== undefined) {
    const parsed = sessionMcpServersSchema.safeParse(opts.mcpServers);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw CanopyException.badRequest(`opts.mcpServers: ${issue.message}`, { field: 'opts.mcpServers' });
    }
  }
  if (opts?.context === undefined) return;
  const parsed = contextPolicySchema.safeParse(opts.context);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = ['opts', 'context', ...issue.path].join('.');
    throw CanopyException.badRequest(`${field}: ${issue.message}`, { field });
  }
}

/**
 * checkOpts, and the tenant's MCP servers a session names (opts.mcpServers) exist: an unknown name answers 400 on
 * opts.mcpServers.
 */
export async function checkOptsFor(
  tools: Pick<ToolRegistry, 'mcpServerNames'>,
  tenantId: string,
  opts: Record<string, unknown> | undefined,
): Promise<void> {
  checkOpts(opts);
  const names = opts?.mcpServers as string[] | undefined;
  if (!names || names.length === 0) return;
  const known = await tools.mcpServerNames(tenantId);
  for (const name of names) {
    if (!known.has(name)) {
      throw CanopyException.badRequest(`unknown MCP server "${name}" (POST /v1/mcp-servers adds one)`, {
        field: 'opts.mcpServers',
      });
    }
  }
}

export function checkContent(content: MessageContent): Block[] {
  const blocks = toBlocks(content);
  if (blocks.length === 0) throw CanopyException.badRequest('content is empty', { field: 'content' });
  if (!isTurnBoundary({ role: 'user', content: blocks, timestamp: 0 })) {
    throw CanopyException.badRequest('a prompt cannot carry tool results', { field: 'content' });
  }
  return blocks;
}
