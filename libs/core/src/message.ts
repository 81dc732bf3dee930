// Messages and their content blocks. Every message is one tree node; tool results travel in a user message.

export type Role = 'user' | 'assistant';

export interface TextBlock {
  type: 'text';
  text: string;
}

/** Model reasoning. `text` (not `thinking`) so streaming deltas append the same way as for text blocks. */
export interface ThinkingBlock {
  type: 'thinking';
  text: string;
  signature?: string;
}

export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

export interface AttachmentBlock {
  type: 'attachment';
  mediaType: string;
  /**
   * A stored file (POST /v1/files): its bytes are read when the model is called, never kept in the message.
   * Otherwise base64 data, or a URL the model provider can fetch; one of the three.
   */
  fileId?: string;
  data?: string;
  url?: string;
  name?: string;
  /** A stored file's size in bytes (set with fileId). */
  bytes?: number;
}

export interface ToolResultBlock {
  type: 'tool_result';
  toolUseId: string;
  content: string | Array<TextBlock | AttachmentBlock>;
  isError: boolean;
}

export type Block = TextBlock | ThinkingBlock | ToolUseBlock | ToolResultBlock | AttachmentBlock;
export type BlockType = Block['type'];

/** The blocks an assistant message may carry. */
export type AssistantBlock = TextBlock | ThinkingBlock | ToolUseBlock;

export interface Message {
  role: Role;
  content: Block[];
  /** Milliseconds since the Unix epoch. */
  timestamp: number;
  /**
   * The last message a run kept when a newer prompt interrupted it (`ifBusy: "interrupt"`): its completed steps
   * and the text it had streamed are on the path, and it ends here. Absent otherwise.
   */
  interrupted?: true;
}

export type MessageContent = string | Block[];

/** Normalises prompt content: a string becomes one text block. */
export function toBlocks(content: MessageContent): Block[] {
  return typeof content === 'string' ? [{ type: 'text', text: content }] : content;
}

export function userMessage(content: MessageContent, timestamp: number = Date.now()): Message {
  return { role: 'user', content: toBlocks(content), timestamp };
}

export function assistantMessage(content: MessageContent, timestamp: number = Date.now()): Message {
  return { role: 'assistant', content: toBlocks(content), timestamp };
}

export function toolResultMessage(results: ToolResultBlock[], timestamp: number = Date.now()): Message {
  return { role: 'user', content: results, timestamp };
}

export function isTextBlock(b: Block): b is TextBlock {
  return b.type === 'text';
}

export function isToolUseBlock(b: Block): b is ToolUseBlock {
  return b.type === 'tool_use';
}

export function isToolResultBlock(b: Block): b is ToolResultBlock {
  return b.type === 'tool_result';
}

export function isAttachmentBlock(b: Block): b is AttachmentBlock {
  return b.type === 'attachment';
}

/** A user message that carries tool results continues the previous turn rather than starting one. */
export function isToolResultMessage(m: Message): boolean {
  return m.role === 'user' && m.content.some(isToolResultBlock);
}

/** A user message that opens a turn: a user message without tool results. */
export function isTurnBoundary(m: Message): boolean {
  return m.role === 'user' && !m.content.some(isToolResultBlock);
}

/** Text blocks joined with blank lines; other blocks are ignored. */
export function messageText(m: Pick<Message, 'content'>): string {
  return joinText(m.content);
}

export function joinText(blocks: readonly Block[]): string {
  return blocks
    .filter(isTextBlock)
    .map((b) => b.text)
    .join('\n\n');
}

export function toolUses(m: Message): ToolUseBlock[] {
  return m.content.filter(isToolUseBlock);
}

/** The text a tool result carries, whether its content is a string or blocks. */
export function toolResultText(r: ToolResultBlock): string {
  return typeof r.content === 'string' ? r.content : joinText(r.content);
}
