// Conversations in and out: one session exported as canopy (the exact tree), OpenAI or Anthropic messages (the
// active path) or markdown; imported from canopy, OpenAI / Anthropic message arrays or a ChatGPT export's
// conversation; and in bulk, a tenant's (or a user's) sessions streamed as canopy documents, one per line, and
// lines of documents imported each on its own, all or nothing per session. The conversions are libs/core's pure
// formats, run by the import converter (off the event loop for large inputs); this service adds the store and the
// rules of a session (its model's form, its tools, its user). A large import is written in batches into a staged
// session, published when complete; large imports and bulk streams are heavy operations of their tenant's.

import { randomBytes } from 'node:crypto';
import { CanopyException } from '@canopy/common';
import {
  FormatError,
  modelSchema,
  toAnthropic,
  toCanopyDocument,
  toMarkdown,
  toOpenAi,
  type CanopyDocument,
  type ConversationFile,
  type Message,
  type Scope,
  type SessionInfo,
} from '@canopy/core';
import type { ToolRegistry } from '@canopy/agent';
import type { LiveRegistry } from '@canopy/realtime';
import type {
  FileRecord,
  FilesService,
  ImportSessionHead,
  SessionCatalogStore,
  SessionFilter,
  SessionStore,
} from '@canopy/store';
import { discard, fileIdsOf, referencedFileIds, restoreFiles, withFileData } from './transfer-files';
import { checkOpts, checkTools, toSessionInfo } from '@canopy/session';
import { resolveFilter, type CatalogFilter } from './catalog-filter';
import type { HeavyOperations } from './heavy-operations';
import { INLINE_PREPARATION_BYTES, type ImportConverter } from './import-converter';
import type { ImportFormat, PreparationError, PreparationResult, PreparedImport } from './import-preparation';

export type ExportFormat = 'canopy' | 'openai' | 'anthropic' | 'markdown';
export type { ImportFormat };

/** The model of an imported conversation that names none. */
export const DEFAULT_IMPORT_MODEL = 'mock:echo';

/** A staged import nobody touched for this long (its process died) is the sweep's. */
const STAGED_IMPORT_EXPIRY_MS = 10 * 60_000;
/** How often an import in progress touches its staged session. */
const STAGED_IMPORT_TOUCH_MS = 60_000;

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
    private readonly converter: ImportConverter,
    private readonly heavy: HeavyOperations,
    private readonly imports: { batchNodes: number },
    /** Stored files: a canopy export carries them, an import stores them again (null: exports without them). */
    private readonly files: FilesService | null = null,
  ) {}

  /** One session in a format: JSON for canopy / openai / anthropic, text for markdown. */
  async export(
    scope: Scope,
    id: string,
    format: ExportFormat,
  ): Promise<{ contentType: string; body: unknown }> {
    const loaded = await this.store.loadTree(scope, id);
    if (!loaded) throw CanopyException.notFound('session');
    const summaries = format === 'canopy' ? await this.store.summariesOf(scope, id) : [];
    const { session, nodes } = loaded;
    const info = toSessionInfo(session);
    const byId = new Map(nodes.map((n) => [n.id, n]));
    const stored = this.files
      ? await this.files.forSession(scope.tenantId, fileIdsOf(nodes.map((n) => n.message)))
      : [];
    // The provider formats take the bytes in the messages themselves (their image and document parts).
    const read = (m: Message) =>
      format === 'openai' || format === 'anthropic'
        ? withFileData(m, stored, this.files!)
        : Promise.resolve(m);
    const messages = await Promise.all(
      session.path.flatMap((nodeId) => {
        const node = byId.get(nodeId);
        return node ? [read(node.message)] : [];
      }),
    );
    switch (format) {
      case 'canopy':
        return {
          contentType: 'application/json',
          body: toCanopyDocument(
            info,
            {
              nodes,
              path: session.path,
              cursors: session.cursors,
              nextId: session.nextNodeId,
            },
            summaries,
            await this.carried(stored),
          ),
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
   * Imports one conversation (POST /v1/sessions/import's body as received: JSON bytes) as a new session; all of it
   * or nothing. Parsed, checked and converted off the event loop when large; a large one is a heavy operation of
   * the tenant's. Bad input is a bad_request naming the field (`data...`).
   */
  async importBody(scope: Scope, body: Uint8Array): Promise<SessionInfo> {
    const input = { kind: 'request' as const, body, now: Date.now(), batchNodes: this.imports.batchNodes };
    const work = async () =>
      (await this.save(scope, await this.converter.prepare(input, body.byteLength))).session;
    return body.byteLength > INLINE_PREPARATION_BYTES ? this.heavy.run(scope, 'import', work) : work();
  }

  /** Converts and stores one prepared conversation; bad_request for what the preparation refused. */
  private async save(
    scope: Scope,
    result: PreparationResult,
  ): Promise<{ session: SessionInfo; nodes: number }> {
    if (!result.ok) throw preparationError(result.error);
    const { prepared } = result;
    // The document's files stored again as the tenant's (new ids): its attachments are changed to refer to them.
    const restored =
      this.files && prepared.files.length ? await restoreFiles(this.files, scope, prepared) : [];
    try {
      // Any other file an attachment names must be one the importing credential reaches: a document cannot hand
      // its session another user's file (the model would be sent it, an export would carry it).
      const others = referencedFileIds(prepared).filter((id) => !restored.includes(id));
      const unreachable =
        others.length === 0 ? [] : this.files ? await this.files.unreachable(scope, others) : others;
      if (unreachable.length > 0) {
        throw CanopyException.badRequest(
          `an attachment refers to file ${unreachable[0]}, which is neither in the document's files nor one this credential reaches`,
          { field: 'data.files' },
        );
      }
      return await this.storeImport(scope, prepared, [...restored, ...others]);
    } catch (err) {
      if (this.files) await discard(this.files, scope, restored);
      throw err;
    }
  }

  private async storeImport(
    scope: Scope,
    prepared: PreparedImport,
    restored: string[],
  ): Promise<{ session: SessionInfo; nodes: number }> {
    const { options, session: s } = prepared;
    const model = options.model ?? s.model ?? DEFAULT_IMPORT_MODEL;
    if (!modelSchema.safeParse(model).success || !/^[a-z][a-z0-9-]*:./.test(model)) {
      throw badRequest(
        new FormatError(options.model ? 'model' : 'data.model', `not a model name "${model}"`),
      );
    }
    const tools = s.tools ?? [];
    checkTools(this.tools, tools, s.opts);
    checkOpts(s.opts);
    const head: ImportSessionHead = {
      ...(s.id !== undefined ? { id: s.id } : {}),
      title: s.title,
      model,
      system: s.system,
      opts: s.opts ?? {},
      tools,
      metadata: { ...s.metadata, ...(options.metadata ?? {}) },
      userId: scope.userId ?? options.userId ?? s.userId ?? null,
      pinned: s.pinned ?? false,
      ...(s.createdAt ? { createdAt: new Date(s.createdAt) } : {}),
      ...(s.updatedAt ? { updatedAt: new Date(s.updatedAt) } : {}),
      position: { path: prepared.path, cursors: prepared.cursors, head: prepared.path.at(-1) ?? null },
      nextNodeId: prepared.nextId,
      summaries: prepared.summaries,
    };
    const record =
      prepared.batches.length <= 1
        ? await this.catalog.importBatch(
            scope,
            head,
            prepared.usage,
            prepared.batches[0] ?? null,
            prepared.nodes,
          )
        : await this.importStaged(scope, head, prepared);
    if (this.files && restored.length) await this.files.attach(scope, record.id, restored);
    return { session: toSessionInfo(record), nodes: prepared.nodes };
  }

  /**
   * An import larger than one batch: the session staged (hidden), its nodes a batch per transaction taking turns
   * with other imports of this process, then published; on any failure the staged session is deleted, so the
   * import is all or nothing without one long transaction holding the database.
   */
  private async importStaged(scope: Scope, head: ImportSessionHead, prepared: PreparedImport) {
    const token = randomBytes(18).toString('base64url');
    const expiry = () => new Date(Date.now() + STAGED_IMPORT_EXPIRY_MS);
    const id = await this.heavy.batch(() =>
      this.catalog.stageImport(scope, head, prepared.usage, token, expiry()),
    );
    // The expiry moves on with a batch once a minute, not with every one.
    let touched = Date.now();
    try {
      const size = this.imports.batchNodes;
      for (let i = 0; i < prepared.batches.length; i++) {
        const count = Math.min(size, prepared.nodes - i * size);
        const touch = Date.now() - touched >= STAGED_IMPORT_TOUCH_MS;
        if (touch) touched = Date.now();
        await this.heavy.batch(() =>
          this.catalog.addImportNodes(scope, id, token, prepared.batches[i]!, count, touch ? expiry() : null),
        );
      }
      return await this.heavy.batch(() =>
        this.catalog.publishImport(scope, id, token, {
          ...(head.createdAt ? { createdAt: head.createdAt } : {}),
          ...(head.updatedAt ? { updatedAt: head.updatedAt } : {}),
        }),
      );
    } catch (err) {
      // Left behind if this fails too (the database is away): the sweep deletes it once it expires.
      await this.catalog.discardImport(scope, id, token, this.imports.batchNodes).catch(() => undefined);
      throw err;
    }
  }

  /** Stored files as a canopy document carries them: their bytes as base64. */
  private carried(stored: readonly FileRecord[]): Promise<ConversationFile[]> {
    const files = this.files;
    if (!files) return Promise.resolve([]);
    return Promise.all(
      stored.map(async (f) => ({
        id: f.id,
        name: f.name,
        mediaType: f.mediaType,
        data: (await files.bytesOf(f)).toString('base64'),
      })),
    );
  }

  /**
   * Sessions as canopy documents, oldest created first, from `cursor` on (each document's cursor resumes after it);
   * a heavy operation of the tenant's while it streams.
   */
  async *exportAll(
    scope: Scope,
    filter: CatalogFilter,
    cursor: string | null,
    pageSize = 20,
  ): AsyncGenerator<CanopyDocument> {
    const resolved = await resolveFilter(scope, filter, this.registry);
    if (!resolved) return;
    const end = await this.heavy.begin(scope, 'export');
    try {
      yield* this.exportPages(scope, resolved, cursor, pageSize);
    } finally {
      await end();
    }
  }

  private async *exportPages(
    scope: Scope,
    resolved: SessionFilter,
    cursor: string | null,
    pageSize: number,
  ): AsyncGenerator<CanopyDocument> {
    let after = cursor;
    do {
      const page = await this.catalog.exportPage(scope, resolved, pageSize, after);
      for (const { session, nodes, summaries } of page.data) {
        const stored = this.files
          ? await this.files.forSession(scope.tenantId, fileIdsOf(nodes.map((n) => n.message)))
          : [];
        yield toCanopyDocument(
          toSessionInfo(session),
          { nodes, path: session.path, cursors: session.cursors, nextId: session.nextNodeId },
          summaries,
          await this.carried(stored),
        );
      }
      after = page.nextCursor;
    } while (after);
  }

  /**
   * Imports each line (a JSON document of `format`) on its own; reports every line. Blank lines are skipped. The
   * whole stream is one heavy operation of the tenant's (429 too_many_operations before the first line when it has
   * too many in flight).
   */
  async *importLines(
    scope: Scope,
    lines: AsyncIterable<{ line: number; text: string } | { line: number; error: string }>,
    options: Omit<ImportRequest, 'data'>,
  ): AsyncGenerator<ImportLineReport> {
    const end = await this.heavy.begin(scope, 'import');
    try {
      for await (const entry of lines) {
        const { line } = entry;
        if ('error' in entry) {
          yield { line, ok: false, error: { code: 'bad_request', message: entry.error } };
          continue;
        }
        if (entry.text.trim() === '') continue;
        const input = {
          kind: 'line' as const,
          text: entry.text,
          options,
          now: Date.now(),
          batchNodes: this.imports.batchNodes,
        };
        try {
          const imported = await this.save(scope, await this.converter.prepare(input, entry.text.length));
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
    } finally {
      await end();
    }
  }
}

function badRequest(err: FormatError): CanopyException {
  return CanopyException.badRequest(err.message, {
    field: err.field,
    issues: [{ path: err.field, message: err.message }],
  });
}

/** A preparation's refusal as the API says it: the same answers the validation pipe and the formats give. */
function preparationError(error: PreparationError): CanopyException {
  switch (error.kind) {
    case 'json':
      return CanopyException.badRequest(`not JSON: ${error.message}`);
    case 'invalid': {
      const first = error.issues[0];
      return CanopyException.badRequest(
        first ? `invalid request: ${first.path || '(body)'}: ${first.message}` : 'invalid request',
        { issues: error.issues },
      );
    }
    case 'format':
      return badRequest(new FormatError(error.field, error.message));
  }
}
