// The active path as UIMessage[]: valid for the AI SDK (validateUIMessages), a message per prompt and per reply with
// the versions of each turn in its metadata, tool results folded into their calls, the run in flight last (paused:
// waiting for an approval or a client tool's output). And which turn a regenerate request means.

import { validateUIMessages } from 'ai';
import { assistantMessage, toolResultMessage, Tree, userMessage, type InFlight } from '@canopy/core';
import type { UiChatRequest } from './frontend.dto';
import { regenerateTarget } from './ui-chat.service';
import { uiMessagesOf } from './ui-messages';

/** 1 user, 2 reply (tool call), 3 results, 4 reply; 5 a regeneration of 1's reply; 6 an edit of the first prompt. */
function conversation(): Tree {
  const tree = new Tree()
    .push(
      userMessage([
        { type: 'text', text: 'look' },
        { type: 'attachment', mediaType: 'image/png', data: 'AAAA' },
      ]),
    )
    .push(assistantMessage([{ type: 'tool_use', id: 't1', name: 'calc', input: { a: 1 } }]))
    .push(toolResultMessage([{ type: 'tool_result', toolUseId: 't1', content: '{"sum":2}', isError: false }]))
    .push(
      assistantMessage([
        { type: 'thinking', text: 'so' },
        { type: 'text', text: 'Two.' },
      ]),
    );
  tree.navigate(1).push(assistantMessage('Another reply.'));
  tree.navigate(null).push(userMessage('edited'));
  tree.navigate(4);
  return tree;
}

describe('uiMessagesOf', () => {
  it('gives the active path as valid UI messages with each turn’s versions', async () => {
    const messages = uiMessagesOf(conversation(), null, false, []);
    await expect(validateUIMessages({ messages })).resolves.toHaveLength(2);
    expect(messages).toEqual([
      {
        id: '1',
        role: 'user',
        metadata: { nodeId: 1, versions: [1, 6], versionIndex: 0 },
        parts: [
          { type: 'text', text: 'look' },
          { type: 'file', mediaType: 'image/png', url: 'data:image/png;base64,AAAA' },
        ],
      },
      {
        id: '2',
        role: 'assistant',
        metadata: { nodeId: 2, versions: [2, 5], versionIndex: 0 },
        parts: [
          { type: 'step-start' },
          {
            type: 'tool-calc',
            toolCallId: 't1',
            state: 'output-available',
            input: { a: 1 },
            output: { sum: 2 },
          },
          { type: 'step-start' },
          { type: 'reasoning', text: 'so', state: 'done' },
          { type: 'text', text: 'Two.', state: 'done' },
        ],
      },
    ]);
  });

  it('ends with the run in flight: its prompt, and its reply under the run id, waiting for the client', async () => {
    const uses = [
      { type: 'tool_use' as const, id: 'd1', name: 'deploy', input: {} },
      { type: 'tool_use' as const, id: 'w1', name: 'where', input: {} },
    ];
    const inFlight: InFlight = {
      runId: 'run-9',
      kind: 'prompt',
      pending: [userMessage('deploy'), assistantMessage(uses)],
      partial: null,
      awaiting: uses,
    };
    const tree = conversation();
    const messages = uiMessagesOf(tree, inFlight, true, [
      { name: 'where', description: '', inputSchema: {} },
    ]);
    await expect(validateUIMessages({ messages })).resolves.toHaveLength(4);
    expect(messages.slice(2)).toEqual([
      {
        id: 'run-9-prompt',
        role: 'user',
        metadata: { nodeId: null, versions: [], versionIndex: 0 },
        parts: [{ type: 'text', text: 'deploy' }],
      },
      {
        id: 'run-9',
        role: 'assistant',
        metadata: { nodeId: null, versions: [], versionIndex: 0 },
        parts: [
          { type: 'step-start' },
          {
            type: 'tool-deploy',
            toolCallId: 'd1',
            state: 'approval-requested',
            input: {},
            approval: { id: 'd1' },
          },
          { type: 'tool-where', toolCallId: 'w1', state: 'input-available', input: {} },
        ],
      },
    ]);
  });
});

describe('regenerateTarget', () => {
  const request = (messages: UiChatRequest['messages'], messageId?: string): UiChatRequest => ({
    id: 's',
    trigger: 'regenerate-message',
    messages,
    ...(messageId !== undefined ? { messageId } : {}),
  });
  const user = (id: string, metadata?: unknown) => ({ id, role: 'user' as const, parts: [], metadata });
  const reply = (id: string) => ({ id, role: 'assistant' as const, parts: [] });
  // Two turns on the path: prompts 1 and 3.
  const tree = new Tree()
    .push(userMessage('one'))
    .push(assistantMessage('a'))
    .push(userMessage('two'))
    .push(assistantMessage('b'));

  it('finds the turn by a node id, by metadata, or by the place of the last prompt in the client’s copy', () => {
    expect(regenerateTarget(tree, request([user('x')], '2'))).toBe(1);
    expect(regenerateTarget(tree, request([user('1'), reply('2'), user('3')], '4'))).toBe(3);
    expect(regenerateTarget(tree, request([user('client-a', { nodeId: 3 })]))).toBe(3);
    expect(regenerateTarget(tree, request([user('client-a')], 'client-b'))).toBe(1);
    expect(regenerateTarget(tree, request([user('client-a'), reply('r'), user('client-c')]))).toBe(3);
  });

  it('refuses a conversation with nothing to regenerate', () => {
    expect(() => regenerateTarget(new Tree(), request([user('x')]))).toThrow(/nothing to regenerate/);
  });
});
