// @canopy/client: the typed client of the Canopy API for backends (Node 18+) and browsers (fetch), on the shared
// types of @canopy/core: every route, runs as TurnResults, resumable event streams and live UI turns.

export * from './canopy';
export * from './session';
export * from './errors';
export * from './types';
export * from './catalog-types';
export { exportCursorOf, type ExportByFormat } from './catalog';
export * from './live-turns';
export * from './live-turns-handle';
export * from './live-socket';
export type { FetchLike, HttpOptions } from './http';
export type { FileView, FileUrlView, AttachmentBlock } from '@canopy/core';
export {
  TurnResult,
  TurnResultParseError,
  turnText,
  messageText,
  toolResultText,
  toolUses,
  isToolResultMessage,
  isTurnBoundary,
  type ToolUseBlock,
  type ToolResultBlock,
  type Block,
  type AssistantBlock,
  type TreeNode,
  type Turn,
  type SessionEventBody,
  type SessionEventMap,
  type SessionEventType,
  type ActivityEvent,
  type Message,
  type MessageContent,
  type NodeId,
  type SessionInfo,
  type SessionStatus,
  type ContextMeter,
  type ContextEventData,
  type ContextView,
  type ContextSummary,
  type Usage,
  type ClientTool,
  type CanopyDocument,
  type OpenAiExport,
  type AnthropicExport,
  type ModelInfo,
  type ServerToolInfo,
  type McpServerView,
  type McpToolInfo,
  type TenantInfo,
  type LiveSample,
  type RecentRun,
  type MinuteStats,
  type TenantUsage,
  type ShareView,
  type CreatedShareView,
  type SharedConversationView,
  type SharedTurn,
  type FeedbackRating,
  type FeedbackView,
  type ModelStatsRow,
  type ModelStatsView,
} from '@canopy/core';
export * from './saas-types';
