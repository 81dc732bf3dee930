// Canopy as an MCP server: the tools an MCP client is offered over the caller's own conversations (search, read,
// create, prompt), built per request for the caller's Scope with the official SDK's McpServer. Each tool calls the
// service its REST route calls, so tenancy and user scoping hold exactly as on REST; a Canopy error (another
// tenant's session id: not found) becomes a tool error result with its message, never another tenant's content.

import { Inject, Injectable, Logger } from '@nestjs/common';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { CANOPY_CONFIG, CanopyException, type CanopyConfig } from '@canopy/common';
import {
  allTurns,
  modelSchema,
  searchTextSchema,
  sessionIdSchema,
  TurnProjectionError,
  withRunErrors,
  type ModelInfo,
  type Scope,
  type TurnResultData,
} from '@canopy/core';
import { listModels, modelLimits } from '@canopy/agent';
import { SessionCatalogService, SessionManager } from '@canopy/manager';
import { SessionService } from '@canopy/session';
import { ProviderKeysService } from '@canopy/tenancy';
import { SessionCommands } from '../http/session-commands';

/** What the server says it is in `initialize`. */
const SERVER_INFO = { name: 'canopy', version: '1.0.0' };

@Injectable()
export class CanopyMcpService {
  private readonly logger = new Logger(CanopyMcpService.name);
  private readonly models: ModelInfo[];

  constructor(
    @Inject(CANOPY_CONFIG) private readonly config: CanopyConfig,
    private readonly manager: SessionManager,
    private readonly catalog: SessionCatalogService,
    private readonly sessions: SessionService,
    private readonly commands: SessionCommands,
    private readonly providerKeys: ProviderKeysService,
  ) {
    this.models = listModels(config);
  }

  /** A server whose tools act in `scope` (one per request: the endpoint is stateless). */
  serverFor(scope: Scope): McpServer {
    const server = new McpServer(SERVER_INFO, { capabilities: { tools: {} } });

    server.registerTool(
      'search_conversations',
      {
        description:
          'Full-text search over the messages of your Canopy conversations (words, "quoted phrases", or, -word); ranked hits, each with its session (id, title, model, dates), matching node ids and a snippet',
        inputSchema: { query: searchTextSchema, limit: z.number().int().min(1).max(100).optional() },
      },
      ({ query, limit }) =>
        this.tool(async () =>
          json(await this.catalog.search(scope, { q: query, filter: {}, limit: limit ?? 20, cursor: null })),
        ),
    );

    server.registerTool(
      'get_conversation',
      {
        description:
          'A conversation’s active path as turns (the user’s prompt, the assistant’s messages and tool calls, status, usage)',
        inputSchema: { sessionId: sessionIdSchema },
      },
      ({ sessionId }) => this.tool(async () => json({ data: await this.turns(scope, sessionId) })),
    );

    server.registerTool(
      'create_session',
      {
        description:
          'Start a new conversation; model defaults to the first provider model this deployment offers you',
        inputSchema: {
          model: modelSchema.optional(),
          system: z.string().max(100_000).optional(),
          title: z.string().max(500).optional(),
        },
        outputSchema: { sessionId: z.string() },
      },
      ({ model, system, title }) =>
        this.tool(async () => {
          const session = await this.manager.create(scope, {
            model: model ?? (await this.defaultModel(scope)),
            ...(system !== undefined ? { system } : {}),
            ...(title !== undefined ? { title } : {}),
          });
          return structured({ sessionId: session.id }, `Created session ${session.id}`);
        }),
    );

    server.registerTool(
      'prompt_session',
      {
        description:
          'Send a prompt to a conversation. With wait (the default) answers the reply once the run ends, else at once with the run id',
        inputSchema: {
          sessionId: sessionIdSchema,
          content: z.string().min(1).max(1_000_000),
          wait: z.boolean().optional(),
        },
        outputSchema: {
          runId: z.string(),
          status: z.string().optional(),
          text: z.string().optional(),
        },
      },
      ({ sessionId, content, wait }) =>
        this.tool(async () => {
          const answer = await this.commands.prompt(scope, sessionId, { content, wait: wait ?? true });
          if (answer.status === 202) {
            const { runId } = answer.body as { runId: string };
            return structured({ runId }, `Started run ${runId}`);
          }
          const turn = answer.body as TurnResultData;
          const result = structured(
            { runId: turn.runId, status: turn.status, text: turn.finalResponse },
            turn.finalResponse,
          );
          return turn.isError ? { ...result, isError: true } : result;
        }),
    );

    return server;
  }

  /** As GET /v1/sessions/:id/turns answers (every turn of the active path). */
  private async turns(scope: Scope, sessionId: string) {
    const { tree } = await this.sessions.loadTree(scope, sessionId);
    let turns;
    try {
      turns = allTurns(tree);
    } catch (err) {
      if (err instanceof TurnProjectionError) throw new CanopyException('internal', err.message);
      throw err;
    }
    return withRunErrors(turns, await this.sessions.failedTurns(scope, sessionId));
  }

  /** The first model GET /v1/models lists for the caller that is not a built-in mock. */
  private async defaultModel(scope: Scope): Promise<string> {
    const models = await this.providerKeys.modelsFor(scope.tenantId, this.models, (model) =>
      modelLimits(model, {}, this.config.modelLimits),
    );
    const model = models.find((m) => m.provider !== 'mock');
    if (!model)
      throw CanopyException.badRequest('no provider model is configured: name a model', { field: 'model' });
    return model.id;
  }

  /** Runs a tool: a Canopy error is a tool error saying what it says; anything else is logged, not shown. */
  private async tool(run: () => Promise<CallToolResult>): Promise<CallToolResult> {
    try {
      return await run();
    } catch (err) {
      if (err instanceof CanopyException) return failure(`${err.code}: ${err.message}`);
      this.logger.error(err);
      return failure('internal error');
    }
  }
}

function json(value: unknown): CallToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }] };
}

function structured(value: Record<string, unknown>, text: string): CallToolResult {
  return { content: [{ type: 'text', text }], structuredContent: value };
}

function failure(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}
