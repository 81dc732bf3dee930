// The `markdown` format: the active path for people to read — a heading per message, text as written, thinking
// and tool calls and results in quoted or fenced blocks. One way only: nothing reads it back.

import type { Block, Message } from '../message';

export function toMarkdown(
  session: { title: string | null; model: string; createdAt: string; system: string | null },
  messages: readonly Message[],
): string {
  const out: string[] = [
    `# ${session.title?.trim() || 'Untitled conversation'}`,
    '',
    `_${session.model} · ${session.createdAt}_`,
  ];
  if (session.system) out.push('', '## System', '', session.system);
  for (const m of messages) {
    const results = m.content.every((b) => b.type === 'tool_result');
    const heading = m.role === 'assistant' ? 'Assistant' : results ? 'Tool results' : 'User';
    out.push('', `## ${heading}`, '', `_${new Date(m.timestamp).toISOString()}_`);
    for (const b of m.content) out.push('', block(b));
  }
  return out.join('\n') + '\n';
}

function block(b: Block): string {
  switch (b.type) {
    case 'text':
      return b.text;
    case 'thinking':
      return b.text
        .split('\n')
        .map((line) => `> ${line}`)
        .join('\n');
    case 'tool_use':
      return `**Tool call** \`${b.name}\` (${b.id})\n\n${fence(JSON.stringify(b.input, null, 2), 'json')}`;
    case 'tool_result': {
      const text =
        typeof b.content === 'string'
          ? b.content
          : b.content.map((c) => (c.type === 'text' ? c.text : attachment(c))).join('\n\n');
      return `**Tool result** (${b.toolUseId})${b.isError ? ' — error' : ''}\n\n${fence(text, '')}`;
    }
    case 'attachment':
      return attachment(b);
  }
}

function attachment(a: { mediaType: string; name?: string; url?: string }): string {
  return `_[attachment: ${a.name ?? a.url ?? a.mediaType} (${a.mediaType})]_`;
}

/** A fenced block that its content cannot close early: one backtick more than its longest run (one pass). */
function fence(text: string, lang: string): string {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) === 96) {
      run++;
      if (run > longest) longest = run;
    } else run = 0;
  }
  const ticks = '`'.repeat(Math.max(3, longest + 1));
  return `${ticks}${lang}\n${text}\n${ticks}`;
}
