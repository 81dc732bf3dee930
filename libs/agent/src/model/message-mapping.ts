// Translation between Canopy's message and usage types and the AI SDK's: the prompt a provider receives
// (ModelMessage[] plus the system prompt) and the usage it reports. Pure functions, no I/O.

import type {
  AssistantContent,
  FilePart,
  ImagePart,
  LanguageModelUsage,
  ModelMessage,
  ToolResultPart,
  UserContent,
} from 'ai';
import {
  joinText,
  makeUsage,
  type AttachmentBlock,
  type Message,
  type ToolResultBlock,
  type Usage,
} from '@canopy/core';
import type { FinishReason } from './model-gateway.port';

/**
 * Which thinking blocks are sent back to the provider. 'signed': only those with a signature, as Anthropic's
 * reasoning parts (it rejects unsigned ones); 'all': every one as a plain reasoning part (OpenAI-compatible
 * servers receive it as `reasoning_content`); 'none': dropped (the OpenAI Responses API only accepts its own
 * reasoning items, which Canopy does not keep).
 */
export type ThinkingReplay = 'signed' | 'all' | 'none';

export interface PromptMappingOptions {
  thinking: ThinkingReplay;
}

export interface ModelPrompt {
  system: string | undefined;
  messages: ModelMessage[];
}

type ContentOutputPart = Extract<ToolResultPart['output'], { type: 'content' }>['value'][number];

/** Used when a tool result answers a tool_use that is not in the history (the name is then unknown). */
export const UNKNOWN_TOOL_NAME = 'unknown_tool';

/**
 * Maps Canopy messages to the AI SDK prompt. Tool results (carried by user messages in Canopy) become `tool`
 * messages named after the tool_use they answer; any other content of such a user message follows in a user
 * message of its own. Empty text blocks and messages left without content are dropped, since providers
 * reject them.
 */
export function toModelPrompt(
  system: string | null,
  messages: readonly Message[],
  options: PromptMappingOptions,
): ModelPrompt {
  const toolNames = new Map<string, string>();
  const out: ModelMessage[] = [];
  for (const message of messages) {
    if (message.role === 'assistant') {
      const content = assistantContent(message, options, toolNames);
      if (content.length > 0) out.push({ role: 'assistant', content });
      continue;
    }
    const results: ToolResultPart[] = [];
    const user: Exclude<UserContent, string> = [];
    for (const block of message.content) {
      if (block.type === 'tool_result') results.push(toolResultPart(block, toolNames));
      else if (block.type === 'text' && block.text !== '') user.push({ type: 'text', text: block.text });
      else if (block.type === 'attachment') {
        const part = attachmentPart(block);
        if (part) user.push(part);
      }
      // thinking and tool_use blocks have no meaning in a user message
    }
    if (results.length > 0) out.push({ role: 'tool', content: results });
    if (user.length > 0) out.push({ role: 'user', content: user });
  }
  return { system: system === null || system === '' ? undefined : system, messages: out };
}

function assistantContent(
  message: Message,
  options: PromptMappingOptions,
  toolNames: Map<string, string>,
): Exclude<AssistantContent, string> {
  const content: Exclude<AssistantContent, string> = [];
  for (const block of message.content) {
    switch (block.type) {
      case 'text':
        if (block.text !== '') content.push({ type: 'text', text: block.text });
        break;
      case 'thinking':
        if (options.thinking === 'none' || block.text === '') break;
        if (block.signature !== undefined) {
          content.push({
            type: 'reasoning',
            text: block.text,
            providerOptions: { anthropic: { signature: block.signature } },
          });
        } else if (options.thinking === 'all') {
          content.push({ type: 'reasoning', text: block.text });
        }
        break;
      case 'tool_use':
        toolNames.set(block.id, block.name);
        content.push({ type: 'tool-call', toolCallId: block.id, toolName: block.name, input: block.input });
        break;
      case 'attachment': {
        // Assistant messages take files, not images.
        const part = attachmentPart(block);
        if (part?.type === 'image') {
          content.push({ type: 'file', data: part.image, mediaType: block.mediaType, filename: block.name });
        } else if (part) content.push(part);
        break;
      }
      case 'tool_result':
        break;
    }
  }
  return content;
}

function toolResultPart(block: ToolResultBlock, toolNames: ReadonlyMap<string, string>): ToolResultPart {
  const base: Omit<ToolResultPart, 'output'> = {
    type: 'tool-result',
    toolCallId: block.toolUseId,
    toolName: toolNames.get(block.toolUseId) ?? UNKNOWN_TOOL_NAME,
  };
  const content = block.content;
  if (typeof content === 'string') {
    return { ...base, output: { type: block.isError ? 'error-text' : 'text', value: content } };
  }
  const hasAttachments = content.some((b) => b.type === 'attachment');
  if (block.isError || !hasAttachments) {
    return { ...base, output: { type: block.isError ? 'error-text' : 'text', value: joinText(content) } };
  }
  return {
    ...base,
    output: {
      type: 'content',
      value: content.flatMap((b): ContentOutputPart[] => {
        if (b.type === 'text') return [{ type: 'text', text: b.text }];
        const image = b.mediaType.startsWith('image/');
        if (b.data !== undefined) {
          return image
            ? [{ type: 'image-data', data: b.data, mediaType: b.mediaType }]
            : [{ type: 'file-data', data: b.data, mediaType: b.mediaType, filename: b.name }];
        }
        if (b.url === undefined) return [];
        return image
          ? [{ type: 'image-url', url: b.url }]
          : [{ type: 'file-url', url: b.url, mediaType: b.mediaType }];
      }),
    },
  };
}

/** Base64 data wins when both are present; a URL travels as a URL so providers that can fetch it do. */
function attachmentPart(block: AttachmentBlock): ImagePart | FilePart | undefined {
  const data = block.data ?? (block.url !== undefined ? new URL(block.url) : undefined);
  if (data === undefined) return undefined;
  if (block.mediaType.startsWith('image/')) return { type: 'image', image: data, mediaType: block.mediaType };
  return { type: 'file', data, mediaType: block.mediaType, filename: block.name };
}

/**
 * Maps AI SDK usage to Canopy's. Canopy's inputTokens excludes cached tokens (cache reads and writes are
 * counted apart), while the AI SDK's includes them. Costs stay 0: Canopy keeps no price table.
 */
export function toCanopyUsage(usage: LanguageModelUsage | undefined): Usage {
  if (!usage) return makeUsage();
  const details = usage.inputTokenDetails;
  const cacheReadTokens = details?.cacheReadTokens ?? usage.cachedInputTokens ?? 0;
  const cacheWriteTokens = details?.cacheWriteTokens ?? 0;
  const inputTokens =
    details?.noCacheTokens ?? Math.max(0, (usage.inputTokens ?? 0) - cacheReadTokens - cacheWriteTokens);
  const outputTokens = usage.outputTokens ?? 0;
  return makeUsage({
    inputTokens,
    outputTokens,
    cacheReadTokens,
    cacheWriteTokens,
    totalTokens: usage.totalTokens ?? inputTokens + outputTokens + cacheReadTokens + cacheWriteTokens,
  });
}

/** The AI SDK's finish reasons are Canopy's, spelt differently. */
export function toFinishReason(reason: string | undefined): FinishReason {
  switch (reason) {
    case 'stop':
      return 'stop';
    case 'tool-calls':
      return 'tool_use';
    case 'length':
      return 'length';
    case 'content-filter':
      return 'content_filter';
    case 'error':
      return 'error';
    default:
      return 'other';
  }
}
