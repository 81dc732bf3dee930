// fast-check arbitraries of conversations as Canopy keeps them: canopy documents with random trees (branches,
// several roots, chains, an active path to any node, cursors), every block type (attachments of many kinds, signed
// and unsigned thinking), tool rounds with answered, unanswered, repeated and stray results, consecutive messages
// of a role, usage on some nodes, session fields. And conversations as the OpenAI and Anthropic APIs take them,
// well and badly formed. For the properties of the formats (pure) and of export / import (over HTTP).

import fc from 'fast-check';
import type { Block, CanopyDocument, Message, NodeId, Usage } from '@canopy/core';
import { makeUsage } from '@canopy/core';

const text = fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes('\u0000'));
const word = fc.stringMatching(/^[a-z]{1,10}$/);
/** Tool ids: a small pool, so calls and results meet (and repeat), some outside Anthropic's alphabet. */
const toolId = fc.oneof(fc.constantFrom('t1', 't2', 't3', 'call:1', 'call.2', 't1_2'), word);

const textBlock = text.map((t): Block => ({ type: 'text', text: t }));
const thinkingBlock = fc
  .record({ text, signature: fc.option(word, { nil: undefined }) })
  .map(({ text: t, signature }): Block => ({
    type: 'thinking',
    text: t,
    ...(signature ? { signature } : {}),
  }));
const toolInput = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(word, fc.oneof(word, fc.integer())) },
  // What an older Canopy stored for arguments that were no JSON.
  { weight: 1, arbitrary: fc.oneof(fc.constant('{not json'), fc.constant(null), fc.array(fc.integer())) },
);
const toolName = fc.stringMatching(/^[a-z][a-z_]{0,12}$/);
const toolUseBlock = fc
  .record({ id: toolId, name: toolName, input: toolInput })
  .map((b): Block => ({ type: 'tool_use', ...b }));
const attachment = fc
  .record({
    mediaType: fc.constantFrom(
      'image/png',
      'image/jpeg',
      'image/svg+xml',
      'application/pdf',
      'text/plain',
      'text/markdown',
      'application/zip',
      'weird',
    ),
    source: fc.oneof(
      fc.base64String({ maxLength: 16 }).map((data) => ({ data })),
      // UTF-8 text as base64, as a text document carries it.
      text.map((t) => ({ data: Buffer.from(t, 'utf8').toString('base64') })),
      fc
        .constantFrom('https://example.com/a.png', 'http://example.com/doc', 'ftp://example.com/f')
        .map((url) => ({ url })),
    ),
    name: fc.option(word, { nil: undefined }),
  })
  .map(({ mediaType, source, name }) => ({
    type: 'attachment' as const,
    mediaType,
    ...source,
    ...(name ? { name } : {}),
  }));
const toolResultBlock = (id: fc.Arbitrary<string> = toolId) =>
  fc
    .record({
      toolUseId: id,
      content: fc.oneof(
        text,
        fc.array(fc.oneof(textBlock, attachment as fc.Arbitrary<Block>), { maxLength: 2 }) as fc.Arbitrary<
          Array<{ type: 'text'; text: string }>
        >,
      ),
      isError: fc.boolean(),
    })
    .map((b): Block => ({ type: 'tool_result', ...b }));

const userContent = fc.array(fc.oneof(textBlock, attachment as fc.Arbitrary<Block>, toolResultBlock()), {
  minLength: 1,
  maxLength: 3,
});
const assistantContent = fc.array(
  fc.oneof(textBlock, thinkingBlock, toolUseBlock, attachment as fc.Arbitrary<Block>),
  { minLength: 1, maxLength: 3 },
);
const timestamp = fc.integer({ min: 0, max: 4e12 });

export const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.record({ role: fc.constant('user' as const), content: userContent, timestamp }),
  fc.record({ role: fc.constant('assistant' as const), content: assistantContent, timestamp }),
);

/**
 * A tool round: an assistant message calling tools, then a user message with results for some of them (in any
 * order, some twice, some for calls that were never made) and maybe text before them.
 */
export const toolRoundArb: fc.Arbitrary<Message[]> = fc
  .record({
    lead: fc.array(fc.oneof(textBlock, thinkingBlock), { maxLength: 2 }),
    calls: fc.array(fc.record({ id: toolId, name: toolName, input: toolInput }), {
      minLength: 1,
      maxLength: 3,
    }),
    answers: fc.array(fc.nat(), { maxLength: 4 }),
    stray: fc.option(toolResultBlock(), { nil: undefined }),
    before: fc.array(textBlock, { maxLength: 1 }),
    at: timestamp,
  })
  .map(({ lead, calls, answers, stray, before, at }) => {
    const results = answers.map((n): Block => ({
      type: 'tool_result',
      toolUseId: calls[n % calls.length]!.id,
      content: `result ${n}`,
      isError: n % 5 === 0,
    }));
    return [
      {
        role: 'assistant' as const,
        content: [...lead, ...calls.map((c): Block => ({ type: 'tool_use', ...c }))],
        timestamp: at,
      },
      { role: 'user' as const, content: [...before, ...results, ...(stray ? [stray] : [])], timestamp: at },
    ].filter((m) => m.content.length > 0);
  });

/** Messages one after another: single messages (so consecutive ones of a role) and tool rounds. */
export const pathArb = (maxItems = 8): fc.Arbitrary<Message[]> =>
  fc
    .array(
      fc.oneof({ weight: 3, arbitrary: messageArb.map((m) => [m]) }, { weight: 2, arbitrary: toolRoundArb }),
      { maxLength: maxItems },
    )
    .map((items) => items.flat());

export const usageArb: fc.Arbitrary<Usage | null> = fc.option(
  fc
    .record({
      inputTokens: fc.nat(10_000),
      outputTokens: fc.nat(10_000),
      inputCost: fc.double({ min: 0, max: 1, noNaN: true }),
    })
    .map((p) => makeUsage(p)),
);

const isoDate = fc.integer({ min: 1e12, max: 2e12 }).map((ms) => new Date(ms).toISOString());

/**
 * A canopy document with a random tree of up to `maxNodes` nodes: branches, several roots, chains, tool rounds
 * (a call and its results parent and child), consecutive messages of a role.
 */
export function canopyDocumentArb(maxNodes = 12): fc.Arbitrary<CanopyDocument> {
  return fc
    .record({
      items: fc.array(
        fc.oneof(
          { weight: 3, arbitrary: messageArb.map((m) => [m]) },
          { weight: 1, arbitrary: toolRoundArb },
        ),
        { maxLength: maxNodes },
      ),
      links: fc.array(fc.record({ parent: fc.nat(), root: fc.boolean(), chain: fc.boolean() }), {
        minLength: maxNodes,
        maxLength: maxNodes,
      }),
      usages: fc.array(usageArb, { minLength: maxNodes, maxLength: maxNodes }),
      tip: fc.nat(),
      reserve: fc.nat(3),
      title: fc.option(text, { nil: null }),
      system: fc.option(text, { nil: null }),
      metadata: fc.dictionary(word, fc.oneof(word, fc.integer(), fc.boolean(), fc.constant(null)), {
        maxKeys: 3,
      }),
      userId: fc.option(word, { nil: null }),
      pinned: fc.boolean(),
      createdAt: isoDate,
      updatedAt: isoDate,
      summaries: fc.array(
        fc.record({
          node: fc.nat(),
          text,
          tokens: fc.nat(100_000),
          usage: usageArb.map((u) => u ?? makeUsage()),
        }),
        { maxLength: 3 },
      ),
    })
    .map((r) => {
      const flat = r.items
        .flatMap((messages) => messages.map((message, k) => ({ message, glued: k > 0 })))
        .slice(0, maxNodes);
      const nodes = flat.map(({ message, glued }, i) => {
        const id = i + 1;
        const link = r.links[i]!;
        const parentId = i === 0 ? null : glued || link.chain ? i : link.root ? null : (link.parent % i) + 1;
        return { id, parentId, message, usage: r.usages[i] ?? null };
      });
      const path: NodeId[] = [];
      if (nodes.length) {
        for (let id: NodeId | null = (r.tip % nodes.length) + 1; id !== null; id = nodes[id - 1]!.parentId)
          path.unshift(id);
      }
      const cursors: Record<string, NodeId> = {};
      for (const n of nodes) if (n.parentId !== null) cursors[String(n.parentId)] = n.id; // the newest child
      for (let i = 1; i < path.length; i++) cursors[String(path[i - 1])] = path[i]!;
      const document: CanopyDocument = {
        format: 'canopy' as const,
        version: 1 as const,
        session: {
          id: 'placeholder',
          title: r.title,
          model: 'mock:echo',
          system: r.system,
          opts: {},
          tools: [],
          metadata: r.metadata,
          userId: r.userId,
          pinned: r.pinned,
          createdAt: r.createdAt,
          updatedAt: r.updatedAt,
        },
        tree: { nodes, path, cursors, nextId: nodes.length + 1 + r.reserve },
        usage: makeUsage(),
      };
      // Context summaries of some nodes (one a node at most), in node order; absent when there are none.
      const summaries = new Map<NodeId, NonNullable<CanopyDocument['summaries']>[number]>();
      if (nodes.length) {
        for (const c of r.summaries) {
          const throughNodeId = (c.node % nodes.length) + 1;
          summaries.set(throughNodeId, {
            throughNodeId,
            text: c.text,
            tokens: c.tokens,
            model: 'mock:echo',
            usage: c.usage,
          });
        }
      }
      return {
        ...document,
        ...(summaries.size
          ? { summaries: [...summaries.values()].sort((a, b) => a.throughNodeId - b.throughNodeId) }
          : {}),
      };
    });
}

/** Which calls of a round are answered: null for each once, in order (most often); or any, repeated or not. */
const answersArb = fc.oneof(
  { weight: 3, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.array(fc.nat(), { maxLength: 4 }) },
);

/** Tool arguments as OpenAI sends them: mostly the JSON text of an object, sometimes not. */
const openAiArguments = fc.oneof(
  { weight: 20, arbitrary: fc.dictionary(word, fc.oneof(word, fc.integer())).map((o) => JSON.stringify(o)) },
  { weight: 1, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('{not json', '[1,2]', '3', '"text"') },
);
const openAiCall = fc.record({
  id: toolId,
  type: fc.constant('function'),
  function: fc.record({ name: toolName, arguments: openAiArguments }),
});
const openAiUserPart = fc.oneof(
  text.map((t) => ({ type: 'text', text: t })),
  fc.constantFrom(
    { type: 'image_url', image_url: { url: 'data:image/png;base64,aGk=' } },
    { type: 'image_url', image_url: { url: 'https://example.com/cat.jpg', detail: 'low' } },
    { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,aGk=' } },
    { type: 'input_audio', input_audio: { data: 'aGk=', format: 'wav' } },
  ),
);
const openAiSingle = fc.oneof(
  text.map((t) => ({ role: 'system', content: t })),
  fc.oneof(text, fc.array(openAiUserPart, { minLength: 1, maxLength: 3 })).map((c) => ({
    role: 'user',
    content: c,
  })),
  fc
    .record({
      content: fc.option(text, { nil: null }),
      tool_calls: fc.option(fc.array(openAiCall, { minLength: 1, maxLength: 2 }), { nil: undefined }),
    })
    .map(({ content, tool_calls }) => ({
      role: 'assistant',
      content: content ?? (tool_calls ? null : ''),
      ...(tool_calls ? { tool_calls } : {}),
    })),
  fc.record({ id: toolId, content: text }).map(({ id, content }) => ({
    role: 'tool',
    tool_call_id: id,
    content,
  })),
);
/** An assistant message's calls and tool messages answering them: mostly each once (in any order), or any. */
const openAiRound = fc
  .record({
    content: fc.option(text, { nil: null }),
    calls: fc.uniqueArray(openAiCall, { minLength: 1, maxLength: 3, selector: (c) => c.id }),
    answers: answersArb,
  })
  .map(({ content, calls, answers }) => [
    { role: 'assistant', content, tool_calls: calls },
    ...(answers ?? calls.map((_, i) => i)).map((n) => ({
      role: 'tool',
      tool_call_id: calls[n % calls.length]!.id,
      content: `r${n}`,
    })),
  ]);

/** Chat Completions messages, well or badly formed (tool rounds, stray tool messages, arguments no JSON). */
export const openAiMessagesArb: fc.Arbitrary<unknown[]> = fc
  .array(
    fc.oneof({ weight: 3, arbitrary: openAiSingle.map((m) => [m]) }, { weight: 2, arbitrary: openAiRound }),
    {
      maxLength: 8,
    },
  )
  .map((items) => items.flat());

const anthropicSource = fc.constantFrom(
  { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'aGk=' } },
  { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
  { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'aGk=' }, title: 'a' },
  { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain text' } },
);
const anthropicInput = fc.oneof(
  { weight: 20, arbitrary: fc.dictionary(word, fc.oneof(word, fc.integer())) },
  { weight: 1, arbitrary: fc.constantFrom('{not json', [1], 3) },
);
const anthropicToolUse = fc.record({
  type: fc.constant('tool_use'),
  id: toolId,
  name: toolName,
  input: anthropicInput,
});
const anthropicResult = (id: fc.Arbitrary<string>) =>
  fc.record({
    type: fc.constant('tool_result'),
    tool_use_id: id,
    content: fc.oneof(
      text,
      fc.array(
        fc.oneof(
          text.map((t) => ({ type: 'text', text: t })),
          anthropicSource,
        ),
        { maxLength: 2 },
      ),
    ),
    is_error: fc.boolean(),
  });
const anthropicThinking = fc
  .record({ thinking: text, signature: fc.option(word, { nil: undefined }) })
  .map(({ thinking, signature }) => ({ type: 'thinking', thinking, ...(signature ? { signature } : {}) }));
const anthropicSingle = fc.oneof(
  fc
    .oneof(
      text,
      fc.array(
        fc.oneof(
          text.map((t) => ({ type: 'text', text: t })),
          anthropicSource,
          anthropicResult(toolId),
        ),
        {
          minLength: 1,
          maxLength: 3,
        },
      ),
    )
    .map((content) => ({ role: 'user', content })),
  fc
    .array(
      fc.oneof(
        text.map((t) => ({ type: 'text', text: t })),
        anthropicThinking,
        anthropicToolUse,
      ),
      {
        minLength: 1,
        maxLength: 3,
      },
    )
    .map((content) => ({ role: 'assistant', content })),
);
/** An assistant message's tool_use blocks and a user message answering them (as above), maybe text first. */
const anthropicRound = fc
  .record({
    lead: fc.array(
      fc.oneof(
        text.map((t) => ({ type: 'text', text: t })),
        anthropicThinking,
      ),
      { maxLength: 2 },
    ),
    calls: fc.uniqueArray(anthropicToolUse, { minLength: 1, maxLength: 3, selector: (c) => c.id }),
    answers: answersArb,
    before: fc.array(
      text.map((t) => ({ type: 'text', text: t })),
      { maxLength: 1 },
    ),
  })
  .map(({ lead, calls, answers, before }) => [
    { role: 'assistant', content: [...lead, ...calls] },
    {
      role: 'user',
      content: [
        ...before,
        ...(answers ?? calls.map((_, i) => i)).map((n) => ({
          type: 'tool_result',
          tool_use_id: calls[n % calls.length]!.id,
          content: `r${n}`,
        })),
      ],
    },
  ]);

/** Messages API messages, well or badly formed (tool rounds, stray results, inputs that are no objects). */
export const anthropicMessagesArb: fc.Arbitrary<unknown[]> = fc
  .array(
    fc.oneof(
      { weight: 3, arbitrary: anthropicSingle.map((m) => [m]) },
      { weight: 2, arbitrary: anthropicRound },
    ),
    { maxLength: 8 },
  )
  .map((items) => items.flat());
