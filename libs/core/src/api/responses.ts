// The shapes of the API's answers that the OpenAPI document describes (documentation only: the service builds
// them from the core's types, which these schemas mirror): a run's record, the result of a run (the
// TurnResult and its JSON form) and the answer of opening a session.

import { z } from 'zod';
import { RUN_RESULT_STATUSES } from '../turn-result';
import { USAGE_FIELDS } from '../usage';

const usageSchema = z.object(Object.fromEntries(USAGE_FIELDS.map((f) => [f, z.number()]))).meta({
  description: 'Tokens and cost (US dollars)',
});

export const actorSchema = z
  .discriminatedUnion('type', [
    z.object({ type: z.literal('key'), keyId: z.string() }),
    z.object({ type: z.literal('user'), userId: z.string() }),
    z.object({ type: z.literal('admin') }),
    z.object({ type: z.literal('system') }),
  ])
  .meta({
    description:
      'Who acts: a tenant API key (its id), an end user (user token), the admin, or the system (timers, recovery)',
  });

/** Why a run failed. */
export const runErrorSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional().meta({
    description: 'Figures of some codes: `context_length_exceeded` has `tokens` (the request) and `window`',
  }),
});

export const runViewSchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  kind: z.enum(['prompt', 'branch', 'resume']),
  status: z.enum(['queued', 'running', 'paused', 'completed', 'cancelled', 'error']),
  error: runErrorSchema.optional(),
  usage: usageSchema.meta({ description: 'Usage of the run so far (a paused run’s steps included)' }),
  attempts: z.number().int().meta({ description: 'Executions so far (more than 1 after a takeover)' }),
  actor: actorSchema.nullable().meta({
    description:
      'Who started the run; its hooks and server tools act in that caller’s scope (null: recorded before actors were)',
  }),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  position: z.number().int().min(1).optional().meta({
    description:
      'A prompt waiting in its session’s queue (`status: "queued"` before its run starts): its place there, 1 being the next to run',
  }),
  mode: z.enum(['enqueue', 'interrupt', 'rollback']).optional().meta({
    description: 'A prompt waiting in its session’s queue: how it was queued (its `ifBusy`)',
  }),
});

const itemBase = { id: z.string(), timestamp: z.number() };
const toolCallItemSchema = z.object({
  type: z.literal('tool_call'),
  ...itemBase,
  messageId: z.string(),
  toolId: z.string(),
  toolName: z.string(),
  parameters: z.record(z.string(), z.unknown()),
});
const turnItemSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('message'),
    ...itemBase,
    role: z.enum(['user', 'assistant']),
    text: z.string(),
  }),
  toolCallItemSchema,
  z.object({
    type: z.literal('tool_result'),
    ...itemBase,
    messageId: z.string(),
    toolId: z.string(),
    toolName: z.string(),
    isError: z.boolean(),
    value: z.string(),
  }),
]);

const statusSchema = z.enum(RUN_RESULT_STATUSES).meta({
  description:
    'How the run stopped: completed, paused (waiting for `resume`), cancelled, error, or max_steps (completed at its step cap)',
});

export const turnResultSchema = z
  .object({
    sessionId: z.string(),
    finalResponse: z.string().meta({
      description:
        'The last assistant text (paused: the text before its tool calls; cancelled: the partial text it streamed), or the error of a failed run',
    }),
    items: z.array(turnItemSchema).meta({
      description:
        'Messages (id `msg_<node id>`: the node each has or will have once committed, the same before and after a pause), tool calls and tool results, in order',
    }),
    durationMs: z.number(),
    numTurns: z.number().int().meta({ description: 'Model steps (assistant messages)' }),
    isError: z.boolean().meta({ description: 'True for a failed or cancelled run' }),
    runId: z.string(),
    status: statusSchema,
    awaiting: z.array(toolCallItemSchema).meta({ description: 'Paused: the tool calls awaiting a decision' }),
    error: runErrorSchema
      .optional()
      .meta({ description: 'A failed run: its error code, message and figures' }),
  })
  .meta({ description: 'The result of a run: its messages, tool calls and results, final response, status' });

export const jsonResultSchema = z
  .object({
    session_id: z.string(),
    is_error: z.boolean(),
    duration_ms: z.number(),
    num_turns: z.number().int(),
    result: z.string(),
    run_id: z.string(),
    status: statusSchema,
    awaiting: z.array(
      z.object({ tool_id: z.string(), tool_name: z.string(), parameters: z.record(z.string(), z.unknown()) }),
    ),
    error: runErrorSchema.optional(),
  })
  .meta({ description: 'The result of a run in its snake_case JSON form (`format: "json"`)' });

export const contextViewSchema = z
  .object({
    nodeId: z.number().int().nullable(),
    strategy: z.enum(['none', 'truncate', 'summarize']),
    window: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The model’s context window; null when unknown' }),
    reserveOutputTokens: z.number().int().nullable().meta({ description: 'Tokens kept free for the reply' }),
    tokens: z.number().int().meta({
      description: 'Tokens of the request: the system prompt, the tools’ schemas and the messages sent',
    }),
    fits: z.boolean().meta({
      description:
        'Whether it fits the window less the reserve (a run that does not ends with context_length_exceeded)',
    }),
    summary: z
      .object({ text: z.string(), throughNodeId: z.number().int(), tokens: z.number().int() })
      .nullable(),
    dropped: z
      .number()
      .int()
      .meta({ description: 'Messages of the path the policy leaves out (the oldest turns)' }),
    messages: z.array(
      z.object({ nodeId: z.number().int(), role: z.enum(['user', 'assistant']), tokens: z.number().int() }),
    ),
  })
  .meta({ description: 'What the next run from the node would send, counted in tokens' });

export const acceptedSchema = z.object({
  runId: z.string(),
  staged: z.boolean().optional().meta({ description: 'A steered prompt staged on the busy run' }),
  queued: z.boolean().optional().meta({
    description:
      'The prompt waits in the session’s queue (`ifBusy` enqueue, interrupt, rollback); its run will have `runId`',
  }),
});

const source = z.enum(['persisted', 'start']);

export const openedSessionSchema = z.object({
  session: z
    .looseObject({
      id: z.string(),
      model: z.string(),
      system: z.string().nullable(),
      opts: z.record(z.string(), z.unknown()),
    })
    .meta({ description: 'The session as GET /v1/sessions/:id shows it, after the open' }),
  opened: z.enum(['started', 'existing']).meta({
    description: '`started`: the open made the session live; `existing`: it was live already',
  }),
  resolution: z
    .object({ model: source, system: source, opts: source })
    .meta({ description: 'Which side each field came from: the persisted state or the start options' }),
  seq: z
    .number()
    .int()
    .meta({ description: 'Follow the session’s events with `after=<seq>` to miss nothing' }),
});

export const contextMeterSchema = z
  .object({
    tokens: z.number().int().meta({
      description:
        'Tokens the next run from the head would send: the system prompt, the tools’ schemas and the messages',
    }),
    window: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The model’s context window; null when unknown' }),
    strategy: z.enum(['none', 'truncate', 'summarize']).meta({ description: 'The session’s context policy' }),
    summarizedThrough: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The last node the summary in use covers; null when none does' }),
    calibration: z.number().optional().meta({
      description:
        'The provider’s reported input tokens over Canopy’s count of the last request, when more than 1 (at most 2): the session’s later counts are raised by it. Absent: the counts held',
    }),
  })
  .meta({ description: 'The token meter, counted when the session’s last run ended' });

export const sessionDetailSchema = z
  .looseObject({
    id: z.string(),
    title: z.string().nullable(),
    model: z.string(),
    system: z.string().nullable(),
    opts: z.record(z.string(), z.unknown()),
    tools: z.array(z.record(z.string(), z.unknown())).meta({ description: 'Client tools' }),
    metadata: z.record(z.string(), z.unknown()),
    userId: z.string().nullable(),
    status: z.enum(['idle', 'busy', 'paused']),
    pinned: z.boolean(),
    context: contextMeterSchema.nullable().meta({
      description:
        'The token meter after the last run (what the next run from the head would send, against the window); null before any run was counted. Live: `context` events of kind `meter`',
    }),
    createdAt: z.string(),
    updatedAt: z.string(),
    head: z.number().int().nullable(),
    path: z.array(z.number().int()).meta({ description: 'The active path, root first' }),
    usage: usageSchema,
    live: z
      .object({ controllers: z.number().int(), observers: z.number().int() })
      .optional()
      .meta({ description: 'Subscribers, when the session is live' }),
    inFlight: z.record(z.string(), z.unknown()).optional().meta({
      description: 'The run in flight: {runId, pending, partial, awaiting}, what it has not committed yet',
    }),
    queued: z.array(z.record(z.string(), z.unknown())).meta({
      description: 'Prompts waiting in the queue, {id, mode, content, createdAt}, in the order they will run',
    }),
  })
  .meta({ description: 'A session as GET /v1/sessions/:id shows it' });
