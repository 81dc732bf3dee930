// Request schemas and views of share links (a read-only link to a frozen path of a session) and of feedback on
// replies (a rating per user and reply). Shared by the api (validation, OpenAPI), the SDK and the web UI (types).

import { z } from 'zod';
import type { AssistantBlock, AttachmentBlock, TextBlock, ToolResultBlock } from '../message';
import type { Usage } from '../usage';

const isoDate = z.iso.datetime({ offset: true });

export const createShareSchema = z
  .object({
    /** The last node the link shows (default: the session's head). */
    nodeId: z.number().int().min(1).optional(),
    /** After this the link answers 404 (default: never). */
    expiresAt: isoDate.optional(),
    /** The title the link shows (default: the session's title now). */
    title: z.string().max(500).nullable().optional(),
    /** Show each turn's token usage and cost (default false). */
    includeUsage: z.boolean().optional(),
  })
  .strict();
export type CreateShareRequest = z.infer<typeof createShareSchema>;

export const listSharesQuerySchema = z
  .object({
    sessionId: z.string().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();
export type ListSharesQuery = z.infer<typeof listSharesQuerySchema>;

/** A share link as its tenant sees it. `token` and `url` only in the answer to its creation (stored hashed). */
export interface ShareView {
  id: string;
  sessionId: string;
  nodeId: number;
  title: string | null;
  includeUsage: boolean;
  userId: string | null;
  expiresAt: string | null;
  createdAt: string;
}

export interface CreatedShareView extends ShareView {
  token: string;
  /** The web UI's page of the link (`<origin>/#/shared/<token>`). */
  url: string;
}

/** One turn of a shared conversation: what was said, nothing about who or where. */
export interface SharedTurn {
  id: number;
  resId: number | null;
  userText: TextBlock[];
  userAttachments: AttachmentBlock[];
  userTimestamp: number | null;
  content: AssistantBlock[];
  toolResults: Record<string, ToolResultBlock>;
  timestamp: number | null;
  /** Only when the share includes usage. */
  usage?: Usage;
}

/** What GET /v1/shared/:token answers: the snapshot's title and turns, nothing else. */
export interface SharedConversationView {
  title: string | null;
  sharedAt: string;
  turns: SharedTurn[];
}

export const forkSharedSchema = z
  .object({
    title: z.string().max(500).nullable().optional(),
  })
  .strict();

export const FEEDBACK_RATINGS = ['up', 'down'] as const;
export type FeedbackRating = (typeof FEEDBACK_RATINGS)[number];

const tagSchema = z
  .string()
  .min(1)
  .max(50)
  .refine((v) => ![...v].some((c) => c.charCodeAt(0) < 0x20), { message: 'no control characters' });

export const putFeedbackSchema = z
  .object({
    rating: z.enum(FEEDBACK_RATINGS),
    comment: z.string().max(4_000).nullable().optional(),
    tags: z.array(tagSchema).max(20).optional(),
    /** A tenant key rating for one of its end users (a user token always rates as its user). */
    userId: z.string().min(1).max(200).optional(),
  })
  .strict();
export type PutFeedbackRequest = z.infer<typeof putFeedbackSchema>;

export const deleteFeedbackQuerySchema = z
  .object({
    /** A tenant key removing one of its end users' ratings. */
    userId: z.string().min(1).max(200).optional(),
  })
  .strict();

export const feedbackQuerySchema = z
  .object({
    from: isoDate.optional(),
    to: isoDate.optional(),
    model: z.string().min(1).max(200).optional(),
    rating: z.enum(FEEDBACK_RATINGS).optional(),
    userId: z.string().min(1).max(200).optional(),
    sessionId: z.string().min(1).max(200).optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
    cursor: z.string().min(1).max(500).optional(),
  })
  .strict();
export type FeedbackQuery = z.infer<typeof feedbackQuerySchema>;

export const feedbackExportQuerySchema = feedbackQuerySchema.omit({ limit: true, cursor: true });
export type FeedbackExportQuery = z.infer<typeof feedbackExportQuerySchema>;

/** A rating with the turn it rates. */
export interface FeedbackView {
  id: string;
  sessionId: string;
  nodeId: number;
  /** Who rated: the end user (null: the tenant's key). */
  userId: string | null;
  rating: FeedbackRating;
  comment: string | null;
  tags: string[];
  /** The session's model when the reply was rated. */
  model: string;
  /** The turn: its prompt's text, the reply's text and the turn's usage. */
  promptNodeId: number;
  prompt: string;
  reply: string;
  usage: Usage;
  createdAt: string;
  updatedAt: string;
}

export const modelStatsQuerySchema = z
  .object({
    /** The first UTC day of the window (default: 29 days before `to`). */
    from: isoDate.optional(),
    /** The last UTC day of the window (default: today). */
    to: isoDate.optional(),
    groupBy: z.enum(['model', 'user']).default('model'),
    /** Admin only: one tenant (default every tenant). */
    tenantId: z.uuid().optional(),
  })
  .strict();
export type ModelStatsQuery = z.infer<typeof modelStatsQuerySchema>;

/** One model's (or user's) figures over a window, from the daily rollups. */
export interface ModelStatsRow {
  /** The model, or the user (null: sessions of no user). */
  key: string | null;
  runs: number;
  /** Runs that failed; errorRate: of those that finished. */
  errors: number;
  errorRate: number;
  /** Created to finished, of the runs that finished; within 25% (the rollup's histogram buckets). */
  latencyP50Ms: number | null;
  latencyP95Ms: number | null;
  /** Created to the first output token, of the runs that completed (recorded since it began); within 25%. */
  timeToFirstTokenP50Ms: number | null;
  timeToFirstTokenP95Ms: number | null;
  inputTokens: number;
  outputTokens: number;
  totalTokens: number;
  totalCost: number;
  thumbsUp: number;
  thumbsDown: number;
  /** thumbsUp / (thumbsUp + thumbsDown); null without ratings. */
  thumbsUpShare: number | null;
}

export interface ModelStatsView {
  from: string;
  to: string;
  groupBy: 'model' | 'user';
  data: ModelStatsRow[];
}
