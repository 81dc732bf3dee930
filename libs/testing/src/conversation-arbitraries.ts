// fast-check arbitraries of conversations as Canopy keeps them: canopy documents with random trees (branches,
// several roots, an active path to any node, cursors), every block type, usage on some nodes, session fields.
// For the round-trip properties of the formats (pure) and of export / import (over HTTP).

import fc from 'fast-check';
import type { Block, CanopyDocument, Message, NodeId, Usage } from '@canopy/core';
import { makeUsage } from '@canopy/core';

const text = fc.string({ unit: 'grapheme', maxLength: 40 }).filter((s) => !s.includes('\u0000'));
const word = fc.stringMatching(/^[a-z]{1,10}$/);

const textBlock = text.map((t): Block => ({ type: 'text', text: t }));
const thinkingBlock = fc
  .record({ text, signature: fc.option(word, { nil: undefined }) })
  .map(({ text: t, signature }): Block => ({
    type: 'thinking',
    text: t,
    ...(signature ? { signature } : {}),
  }));
const toolUseBlock = fc
  .record({
    id: word,
    name: fc.stringMatching(/^[a-z][a-z_]{0,12}$/),
    input: fc.dictionary(word, fc.oneof(word, fc.integer())),
  })
  .map((b): Block => ({ type: 'tool_use', ...b }));
const attachment = fc
  .record({
    mediaType: fc.constantFrom('image/png', 'application/pdf', 'text/plain'),
    data: fc.base64String({ maxLength: 16 }),
  })
  .map((a) => ({ type: 'attachment' as const, ...a }));
const toolResultBlock = fc
  .record({
    toolUseId: word,
    content: fc.oneof(
      text,
      fc.array(textBlock, { maxLength: 2 }) as fc.Arbitrary<Array<{ type: 'text'; text: string }>>,
    ),
    isError: fc.boolean(),
  })
  .map((b): Block => ({ type: 'tool_result', ...b }));

const userContent = fc.array(fc.oneof(textBlock, attachment as fc.Arbitrary<Block>, toolResultBlock), {
  minLength: 1,
  maxLength: 3,
});
const assistantContent = fc.array(fc.oneof(textBlock, thinkingBlock, toolUseBlock), {
  minLength: 1,
  maxLength: 3,
});

export const messageArb: fc.Arbitrary<Message> = fc.oneof(
  fc.record({
    role: fc.constant('user' as const),
    content: userContent,
    timestamp: fc.integer({ min: 0, max: 4e12 }),
  }),
  fc.record({
    role: fc.constant('assistant' as const),
    content: assistantContent,
    timestamp: fc.integer({ min: 0, max: 4e12 }),
  }),
);

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

/** A canopy document with a random tree of up to `maxNodes` nodes. */
export function canopyDocumentArb(maxNodes = 12): fc.Arbitrary<CanopyDocument> {
  return fc
    .record({
      parents: fc.array(fc.nat(), { maxLength: maxNodes }),
      roots: fc.array(fc.boolean(), { maxLength: maxNodes }),
      messages: fc.array(messageArb, { minLength: maxNodes, maxLength: maxNodes }),
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
    })
    .map((r) => {
      const nodes = r.parents.map((p, i) => {
        const id = i + 1;
        const parentId = i === 0 || r.roots[i] ? null : (p % i) + 1;
        return { id, parentId, message: r.messages[i]!, usage: r.usages[i] ?? null };
      });
      const path: NodeId[] = [];
      if (nodes.length) {
        for (let id: NodeId | null = (r.tip % nodes.length) + 1; id !== null; id = nodes[id - 1]!.parentId)
          path.unshift(id);
      }
      const cursors: Record<string, NodeId> = {};
      for (const n of nodes) if (n.parentId !== null) cursors[String(n.parentId)] = n.id; // the newest child
      for (let i = 1; i < path.length; i++) cursors[String(path[i - 1])] = path[i]!;
      return {
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
    });
}
