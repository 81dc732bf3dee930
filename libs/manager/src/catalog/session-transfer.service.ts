// Conversations in and out: one session exported as canopy (the exact tree), OpenAI or Anthropic messages (the
// active path) or markdown; imported from canopy, OpenAI / Anthropic message arrays or a ChatGPT export's
// conversation; and in bulk, a tenant's (or a user's) sessions streamed as canopy documents, one per line, and
// lines of documents imported each on its own, all or nothing per session. The conversions are libs/core's pure
// formats; this service adds the store and the rules of a session (its model's form, its tools, its user).

import { CanopyException } from '@canopy/common';
import {
  FormatError,
  fromAnthropic,
  fromCanopyDocument,
  fromChatGpt,
  fromOpenAi,
  modelSchema,
  toAnthropic,
  toCanopyDocument,
  toMarkdown,
  toOpenAi,
  type CanopyDocument,
  type Conversation,
  type Scope,
  type SessionInfo,
} from '@canopy/core';
import type { ToolRegistry } from '@canopy/agent';
import type { LiveRegistry } from '@canopy/realtime';
import type { SessionCatalogStore, SessionStore } from '@canopy/store';
import { checkMockDelays, checkTools, toSessionInfo } from '@canopy/session';
import { resolveFilter, type CatalogFilter } from './catalog-filter';

export type ExportFormat = 'canopy' | 'openai' | 'anthropic' | 'markdown';
export type ImportFormat = 'canopy' | 'openai' | 'anthropic' | 'chatgpt';

/** The model of an imported conversation that names none. */
export const DEFAULT_IMPORT_MODEL = 'mock:echo';

export interface ImportRequest {
  format: ImportFormat;
  data: unknown;
  userId?: string;
  /** Merged over the conversation's own metadata. */
  metadata?: Record<string, unknown>;
  /** The model (default: the conversation's, else mock:echo). */
  model?: string;
}

export type ImportLineReport =
  | { line: number; ok: true; id: string; nodes: number }
  | { line: number; ok: false; error: { code: string; message: string; field?: string } };

export class SessionTransferService {
  constructor(
    private readonly store: SessionStore,
    private readonly catalog: SessionCatalogStore,
    private readonly registry: LiveRegistry,
    private readonly tools: ToolRegistry,
  ) {}

  /** One session in a format: JSON for canopy / openai / anthropic, text for markdown. */
  async export(
    scope: Scope,
    id: string,
    format: ExportFormat,
  ): Promise<{ contentType: string; body: unknown }> {
    const loaded = await this.store.loadTree(scope, id);
    if (!loaded) throw CanopyException.notFound('session');
    const { session, nodes } = loaded;
    const info = toSessionInfo(session);
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const messages = session.path.flatMap((nodeId) => {
      const node = byId.get(nodeId);
      return node ? [node.message] : [];
    });
    switch (format) {
      case 'canopy':
        return {
          contentType: 'application/json',
          body: toCanopyDocument(info, {
            nodes,
            path: session.path,
            cursors: session.cursors,
            nextId: session.nextNodeId,
          }),
        };
      case 'openai':
        return { contentType: 'application/json', body: toOpenAi(session.model, session.system, messages) };
      case 'anthropic':
        return {
          contentType: 'application/json',
          body: toAnthropic(session.model, session.system, messages, {
            ...(typeof session.opts.maxTokens === 'number' ? { maxTokens: session.opts.maxTokens } : {}),
          }),
        };
      case 'markdown':
        return { contentType: 'text/markdown; charset=utf-8', body: toMarkdown(info, messages) };
    }
  }

  /**
   * Imports one conversation as a new session; all of it or nothing. Bad input is a bad_request naming the field
   * (`field` is prefixed by `base`: `data...` for one import, `line 3: ...` in bulk).
   */
  async import(scope: Scope, request: ImportRequest, base = 'data'): Promise<SessionInfo> {
    return (await this.importConversation(scope, request, base)).session;
  }

  private async importConversation(
    scope: Scope,
    request: ImportRequest,
    base: string,
  ): Promise<{ session: SessionInfo; nodes: number }> {
    const conversation = this.read(request, base);
    const s = conversation.session;
    const model = request.model ?? s.model ?? DEFAULT_IMPORT_MODEL;
    if (!modelSchema.safeParse(model).success || !/^[a-z][a-z0-9-]*:./.test(model)) {
      throw badRequest(
        new FormatError(request.model ? 'model' : `${base}.model`, `not a model name "${model}"`),
      );
    }
    const tools = s.tools ?? [];
    checkTools(this.tools, tools, s.opts);
    checkMockDelays(s.opts);
    const record = await this.catalog.importSession(scope, {
      ...(s.id !== undefined ? { id: s.id } : {}),
      title: s.title,
      model,
      system: s.system,
      opts: s.opts ?? {},
      tools,
      metadata: { ...s.metadata, ...(request.metadata ?? {}) },
      userId: scope.userId ?? request.userId ?? s.userId ?? null,
      pinned: s.pinned ?? false,
      ...(s.createdAt ? { createdAt: new Date(s.createdAt) } : {}),
      ...(s.updatedAt ? { updatedAt: new Date(s.updatedAt) } : {}),
      nodes: conversation.tree.nodes,
      position: {
        path: conversation.tree.path,
        cursors: conversation.tree.cursors,
        head: conversation.tree.path.at(-1) ?? null,
      },
      nextNodeId: conversation.tree.nextId,
    });
    return { session: toSessionInfo(record), nodes: conversation.tree.nodes.length };
  }

  /** Sessions as canopy documents, oldest created first, from `cursor` on (each document's cursor resumes after it). */
  async *exportAll(
    scope: Scope,
    filter: CatalogFilter,
    cursor: string | null,
    pageSize = 20,
  ): AsyncGenerator<CanopyDocument> {
    const resolved = await resolveFilter(scope, filter, this.registry);
    if (!resolved) return;
    let after = cursor;
    do {
      const page = await this.catalog.exportPage(scope, resolved, pageSize, after);
      for (const { session, nodes } of page.data) {
        yield toCanopyDocument(toSessionInfo(session), {
          nodes,
          path: session.path,
          cursors: session.cursors,
          nextId: session.nextNodeId,
        });
      }
      after = page.nextCursor;
    } while (after);
  }

  /** Imports each line (a JSON document of `format`) on its own; reports every line. Blank lines are skipped. */
  async *importLines(
    scope: Scope,
    lines: AsyncIterable<{ line: number; text: string } | { line: number; error: string }>,
    options: Omit<ImportRequest, 'data'>,
  ): AsyncGenerator<ImportLineReport> {
    for await (const entry of lines) {
      const { line } = entry;
      if ('error' in entry) {
        yield { line, ok: false, error: { code: 'bad_request', message: entry.error } };
        continue;
      }
      if (entry.text.trim() === '') continue;
      let data: unknown;
      try {
        data = JSON.parse(entry.text);
      } catch (err) {
        yield {
          line,
          ok: false,
          error: { code: 'bad_request', message: `not JSON: ${(err as Error).message}` },
        };
        continue;
      }
      try {
        const imported = await this.importConversation(scope, { ...options, data }, 'data');
        yield { line, ok: true, id: imported.session.id, nodes: imported.nodes };
      } catch (err) {
        if (!(err instanceof CanopyException) || err.status >= 500) throw err;
        const field = (err.details as { field?: unknown } | undefined)?.field;
        yield {
          line,
          ok: false,
          error: { code: err.code, message: err.message, ...(typeof field === 'string' ? { field } : {}) },
        };
      }
    }
  }

  private read(request: ImportRequest, base: string): Conversation {
    const now = Date.now();
    try {
      switch (request.format) {
        case 'canopy':
          return fromCanopyDocument(request.data, base);
        case 'openai':
          return fromOpenAi(request.data, now, base);
        case 'anthropic':
          return fromAnthropic(request.data, now, base);
        case 'chatgpt':
          return fromChatGpt(request.data, now, base);
      }
    } catch (err) {
      if (err instanceof FormatError) throw badRequest(err);
      throw err;
    }
  }
}

function badRequest(err: FormatError): CanopyException {
  return CanopyException.badRequest(err.message, {
    field: err.field,
    issues: [{ path: err.field, message: err.message }],
  });
}
