// The `ai` package's framework-agnostic chat driven from Node: AbstractChat with a ChatState kept in plain fields
// (what @ai-sdk/react's useChat keeps in React state), over DefaultChatTransport pointed at Canopy.

import {
  AbstractChat,
  DefaultChatTransport,
  type ChatInit,
  type ChatState,
  type ChatStatus,
  type UIMessage,
} from 'ai';

/** The metadata Canopy puts on a chat's messages. */
export interface CanopyMeta {
  nodeId: number | null;
  versions: number[];
  versionIndex: number;
}

export type ChatMessage = UIMessage<CanopyMeta>;

class NodeChatState implements ChatState<ChatMessage> {
  status: ChatStatus = 'ready';
  error: Error | undefined = undefined;
  constructor(public messages: ChatMessage[] = []) {}
  pushMessage = (message: ChatMessage) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index: number, message: ChatMessage) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = <T>(thing: T): T => structuredClone(thing);
}

export class NodeChat extends AbstractChat<ChatMessage> {
  constructor({ messages, ...init }: ChatInit<ChatMessage>) {
    super({ ...init, state: new NodeChatState(messages) });
  }
}

/** DefaultChatTransport against a Canopy deployment, with a credential and useChat's `body`. */
export function canopyTransport(
  baseUrl: string,
  credential: string,
  body: Record<string, unknown> = {},
  fetchImpl: typeof fetch = fetch,
): DefaultChatTransport<ChatMessage> {
  return new DefaultChatTransport<ChatMessage>({
    api: `${baseUrl}/v1/ui/chat`,
    headers: { authorization: `Bearer ${credential}` },
    body,
    fetch: fetchImpl,
  });
}

/** A message's text parts, joined. */
export const textOf = (message: ChatMessage | undefined): string =>
  (message?.parts ?? [])
    .filter((p) => p.type === 'text')
    .map((p) => (p as { text: string }).text)
    .join('');
