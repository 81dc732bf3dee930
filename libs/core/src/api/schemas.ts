// The request shapes of the public API (API.md) as zod schemas, shared by the service (validation and the
// OpenAPI document) and the SDK (types). Every string and list has a bound, and free-form JSON (opts, metadata,
// tool schemas, tool results) has a nesting limit, so no input can make the service work without bound.

import { z } from 'zod';

export const LIMITS = {
  text: 200_000,
  blocks: 100,
  system: 100_000,
  jsonDepth: 32,
  tools: 128,
  metadataKeys: 64,
  id: 128,
} as const;

/** Free-form JSON with a nesting bound (deeper input is refused before it reaches JSON.stringify or Postgres). */
export function boundedJson(depth = LIMITS.jsonDepth) {
  return z.unknown().refine((v) => jsonDepth(v, depth + 1) <= depth, {
    message: `nested deeper than ${depth} levels`,
  });
}

export function jsonDepth(value: unknown, stopAt = Number.POSITIVE_INFINITY): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max >= stopAt) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth]);
  }
  return max;
}

/** An unpaired UTF-16 surrogate: not text, and jsonb refuses its `\uD800` escape. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function isStorableText(s: string): boolean {
  return !s.includes('\u0000') && !LONE_SURROGATE.test(s);
}

/** Why unstorableTextPath refuses a string or key. */
export const UNSTORABLE_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates';

/**
 * Why refusedInput refuses a key `__proto__`: the schemas (zod) drop such a key without a word (a JavaScript
 * object would take it for its prototype), so a value sent under it would be lost while the request succeeds.
 */
export const RESERVED_KEY_MESSAGE = '"__proto__" is not allowed as a key';

/**
 * The path to the first string (or object key) in a request value that no Postgres text or jsonb column can
 * hold — a NUL character or an unpaired surrogate — or null when there is none.
 */
export function unstorableTextPath(value: unknown): Array<string | number> | null {
  return firstProblem(value, (s) => (isStorableText(s) ? null : UNSTORABLE_TEXT_MESSAGE))?.path ?? null;
}

/**
 * What no request may carry, anywhere, checked in one walk before its schema: unstorable text (a bad_request instead
 * of a database error) and a `__proto__` key (a bad_request instead of a silent loss). The first found, with why.
 */
export function refusedInput(value: unknown): { path: Array<string | number>; message: string } | null {
  return firstProblem(value, (s, isKey) =>
    !isStorableText(s) ? UNSTORABLE_TEXT_MESSAGE : isKey && s === '__proto__' ? RESERVED_KEY_MESSAGE : null,
  );
}

/** The first string or key (depth-first, without recursion) its test finds a problem with: where, and which. */
function firstProblem(
  value: unknown,
  problemOf: (s: string, isKey: boolean) => string | null,
): { path: Array<string | number>; message: string } | null {
  interface Step {
    value: unknown;
    key: string | number | null;
    parent: Step | null;
  }
  const pathOf = (step: Step): Array<string | number> => {
    const path: Array<string | number> = [];
    for (let s: Step | null = step; s && s.key !== null; s = s.parent) path.unshift(s.key);
    return path;
  };
  const stack: Step[] = [{ value, key: null, parent: null }];
  while (stack.length) {
    const step = stack.pop()!;
    const v = step.value;
    if (typeof v === 'string') {
      const message = problemOf(v, false);
      if (message) return { path: pathOf(step), message };
    } else if (Array.isArray(v)) {
      v.forEach((child: unknown, i) => stack.push({ value: child, key: i, parent: step }));
    } else if (v !== null && typeof v === 'object') {
      for (const [key, child] of Object.entries(v as Record<string, unknown>)) {
        const next: Step = { value: child, key, parent: step };
        const message = problemOf(key, true);
        if (message) return { path: pathOf(next), message };
        stack.push(next);
      }
    }
  }
  return null;
}

const jsonObject = z.record(z.string().max(200), z.unknown()).superRefine((v, ctx) => {
  if (jsonDepth(v, LIMITS.jsonDepth + 1) > LIMITS.jsonDepth) {
    ctx.addIssue({ code: 'custom', message: `nested deeper than ${LIMITS.jsonDepth} levels` });
  }
});

export const textBlockSchema = z
  .object({ type: z.literal('text'), text: z.string().max(LIMITS.text) })
  .strict();

/**
 * An attachment: a stored file by id (POST /v1/files; its type and name are the file's), or inline base64 data
 * (stored as a file when the run commits) or a URL, each with its media type.
 */
export const attachmentBlockSchema = z
  .object({
    type: z.literal('attachment'),
    fileId: z.uuid().optional(),
    mediaType: z.string().min(1).max(200).optional(),
    data: z.string().max(10_000_000).optional(),
    url: z.url().max(4_000).optional(),
    name: z.string().max(500).optional(),
    /** A stored file's size (Canopy sets it from the file; a canopy document carries it). */
    bytes: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  })
  .strict()
  .refine((b) => [b.fileId, b.data, b.url].filter((v) => v !== undefined).length === 1, {
    message: 'give one of fileId, data or url',
  })
  .refine((b) => b.fileId !== undefined || b.mediaType !== undefined, {
    message: 'mediaType is required with data or url',
    path: ['mediaType'],
  })
  // A file's own type replaces this placeholder when the prompt is taken (the file's, sniffed from its bytes).
  .transform((b) => ({ ...b, mediaType: b.mediaType ?? 'application/octet-stream' }));

/** What a prompt may carry: text, or text and attachment blocks. */
export const promptContentSchema = z.union([
  z.string().min(1).max(LIMITS.text),
  z
    .array(z.discriminatedUnion('type', [textBlockSchema, attachmentBlockSchema]))
    .min(1)
    .max(LIMITS.blocks),
]);

export const toolNameSchema = z
  .string()
  .regex(/^[a-zA-Z][a-zA-Z0-9_-]{0,63}$/, 'letters, digits, _ and -, 64 at most');

export const clientToolSchema = z
  .object({
    name: toolNameSchema,
    description: z.string().max(4_000),
    inputSchema: jsonObject,
    approval: z.boolean().optional(),
  })
  .strict();

export const metadataSchema = z
  .record(z.string().min(1).max(100), z.union([z.string().max(1_000), z.number(), z.boolean(), z.null()]))
  .refine((m) => Object.keys(m).length <= LIMITS.metadataKeys, {
    message: `at most ${LIMITS.metadataKeys} keys`,
  });

export const sessionIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,128}$/, 'letters, digits, _ and -, 128 at most');
export const modelSchema = z.string().min(3).max(200);

/**
 * A session's context policy (`opts.context`): what a run sends when the active path would not fit the model's
 * window. `none` sends everything (a request over the window ends the run with `context_length_exceeded` before
 * any provider call); `truncate` leaves out the oldest whole turns until the request fits; `summarize`, once the
 * request passes `triggerRatio` of what the window leaves for it, summarizes the oldest turns (the summary is
 * stored against the last node it covers and sent, in the system prompt, by every later run below that node) and
 * truncates what still does not fit.
 */
export const contextPolicySchema = z
  .object({
    strategy: z.enum(['none', 'truncate', 'summarize']),
    /** Tokens kept free for the reply (default: the model's output limit, at most 4,096 and a quarter of the window). */
    reserveOutputTokens: z.number().int().min(0).max(1_000_000).optional(),
    /** Turns at the start of the conversation that truncation never leaves out (default 0). */
    keepFirstTurns: z.number().int().min(0).max(1_000).optional(),
    /** summarize: the share of the window (less the reserve) past which a run summarizes (default 0.8). */
    triggerRatio: z.number().min(0.1).max(1).optional(),
    /** summarize: the model that writes summaries (default: the session's). */
    summaryModel: modelSchema.optional(),
    /** summarize: what the summarizing call is asked (default: a prompt that keeps facts, decisions and open tasks). */
    summaryPrompt: z.string().min(1).max(10_000).optional(),
  })
  .strict();

export const createSessionSchema = z
  .object({
    id: sessionIdSchema.optional(),
    title: z.string().max(500).nullable().optional(),
    model: modelSchema,
    system: z.string().max(LIMITS.system).nullable().optional(),
    opts: jsonObject.optional(),
    tools: z.array(clientToolSchema).max(LIMITS.tools).optional(),
    metadata: metadataSchema.optional(),
    userId: z.string().min(1).max(200).optional(),
    idleShutdownAfterMs: z.number().int().min(0).max(86_400_000).nullable().optional(),
  })
  .strict();

export const updateSessionSchema = z
  .object({
    title: z.string().max(500).nullable().optional(),
    model: modelSchema.optional(),
    system: z.string().max(LIMITS.system).nullable().optional(),
    opts: jsonObject.optional(),
    tools: z.array(clientToolSchema).max(LIMITS.tools).optional(),
    metadata: metadataSchema.optional(),
    /** Exempt from the tenant's retention policy (unless it keeps nothing). */
    pinned: z.boolean().optional(),
  })
  .strict()
  .refine((p) => Object.keys(p).length > 0, { message: 'nothing to change' });

const waitOptions = {
  wait: z.boolean().optional(),
  format: z.enum(['turn', 'json']).optional(),
};

export const promptSchema = z
  .object({
    content: promptContentSchema,
    ifBusy: z.enum(['reject', 'steer', 'enqueue', 'interrupt', 'rollback']).optional().meta({
      description:
        'A busy session: `reject` (409 session_busy, the default), `steer` (staged on the run in flight), `enqueue` (waits its turn, first in first out), `interrupt` (stops the run in flight, which keeps what it had — its prompt, completed steps and streamed text, the last message marked `interrupted` — and goes next), `rollback` (cancels it and goes where its prompt was attached: the cancelled run leaves the active path)',
    }),
    maxSteps: z.number().int().min(1).max(1_000).optional(),
    ...waitOptions,
  })
  .strict();

export const branchSchema = z
  .object({
    nodeId: z.number().int().min(1).nullable(),
    content: promptContentSchema.optional(),
    maxSteps: z.number().int().min(1).max(1_000).optional(),
    ...waitOptions,
  })
  .strict();

export const contextQuerySchema = z
  .object({
    nodeId: z.coerce.number().int().min(1).optional().meta({ description: 'The node (default: the head)' }),
  })
  .strict();

/** GET /v1/sessions/:id/turns: the active path's turns, or a page of them (the latest `limit` before `before`). */
export const turnsQuerySchema = z
  .object({
    before: z.coerce.number().int().min(1).optional().meta({
      description: 'Only turns that start before this node of the active path (a page of earlier turns)',
    }),
    limit: z.coerce
      .number()
      .int()
      .min(1)
      .max(1_000)
      .optional()
      .meta({ description: 'At most this many turns, the latest of those asked (default: all)' }),
  })
  .strict();

export const navigateSchema = z.object({ nodeId: z.number().int().min(1).nullable() }).strict();

export const decisionSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('execute') }).strict(),
  z.object({ type: z.literal('reject'), reason: z.string().max(2_000).optional() }).strict(),
  z
    .object({
      type: z.literal('result'),
      content: promptContentSchema,
      isError: z.boolean().optional(),
    })
    .strict(),
]);

export const resumeSchema = z
  .object({ toolUseId: z.string().min(1).max(200).optional(), decision: decisionSchema, ...waitOptions })
  .strict();

/**
 * POST /v1/sessions/:id/open: start options reconciled with the persisted state (which of them win, and what is persisted). A
 * controller's options are applied; an observer only watches and takes none.
 */
export const openSessionSchema = z
  .object({
    model: modelSchema.optional(),
    system: z.string().max(LIMITS.system).nullable().optional(),
    opts: jsonObject.optional(),
    mode: z.enum(['controller', 'observer']).optional(),
  })
  .strict()
  .refine(
    (o) => o.mode !== 'observer' || (o.model === undefined && o.system === undefined && o.opts === undefined),
    { message: 'an observer takes no start options', path: ['mode'] },
  );

export const createTenantSchema = z.object({ name: z.string().trim().min(1).max(200) }).strict();
export const createKeySchema = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    /** When the key stops working (ISO 8601, in the future); none: never. */
    expiresAt: z.iso
      .datetime({ offset: true })
      .refine((v) => Date.parse(v) > Date.now(), { message: 'expiresAt must be in the future' })
      .optional(),
  })
  .strict();
export const createTokenSchema = z
  .object({ userId: z.string().min(1).max(200), ttlSeconds: z.number().int().min(10).optional() })
  .strict();

export const eventsQuerySchema = z.object({
  mode: z.enum(['controller', 'observer']).optional(),
  after: z.coerce.number().int().min(0).optional(),
  token: z.string().max(4_000).optional(),
});

/** GET /v1/stats: the window, in minutes up to a day (default an hour). */
export const statsQuerySchema = z
  .object({ minutes: z.coerce.number().int().min(1).max(1_440).default(60) })
  .strict();

export const listTenantsQuerySchema = z
  .object({
    limit: z.coerce.number().int().min(1).max(1_000).default(100),
    /** Tenants whose name contains this (case-insensitive). */
    q: z.string().trim().min(1).max(200).optional(),
    /** The `nextCursor` of the previous page. */
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();

export type CreateSessionRequest = z.infer<typeof createSessionSchema>;
export type ContextPolicy = z.infer<typeof contextPolicySchema>;
export type UpdateSessionRequest = z.infer<typeof updateSessionSchema>;
export type PromptRequest = z.infer<typeof promptSchema>;
export type BranchRequest = z.infer<typeof branchSchema>;
export type NavigateRequest = z.infer<typeof navigateSchema>;
export type ResumeRequest = z.infer<typeof resumeSchema>;
export type OpenSessionRequest = z.infer<typeof openSessionSchema>;
export type CreateTokenRequest = z.infer<typeof createTokenSchema>;
