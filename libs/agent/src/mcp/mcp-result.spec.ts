import { modelToolName, needsApproval, toolOutputOf } from './mcp-result';

describe('toolOutputOf', () => {
  it('joins text content, and keeps isError', () => {
    expect(
      toolOutputOf({
        content: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
        isError: true,
      }),
    ).toEqual({
      content: 'a\nb',
      isError: true,
    });
  });

  it('answers images as attachments and resource links as text', () => {
    expect(
      toolOutputOf({
        content: [
          { type: 'image', data: 'AAA=', mimeType: 'image/png' },
          { type: 'resource_link', uri: 'file:///r.md', name: 'r.md', description: 'the readme' },
          { type: 'resource', resource: { uri: 'file:///t.txt', text: 'inline' } },
        ],
      }),
    ).toEqual({
      content: [
        { type: 'attachment', mediaType: 'image/png', data: 'AAA=' },
        { type: 'text', text: '[resource: r.md](file:///r.md) the readme' },
        { type: 'text', text: 'inline' },
      ],
      isError: false,
    });
  });

  it('answers structured content as JSON when the server gave no text', () => {
    expect(toolOutputOf({ content: [], structuredContent: { n: 1 } })).toEqual({
      content: '{"n":1}',
      isError: false,
    });
  });
});

it('names a tool <server>__<tool>, in what providers take, at most 64 characters', () => {
  expect(modelToolName('docs', 'search')).toBe('docs__search');
  expect(modelToolName('docs', 'files.read/all')).toBe('docs__files_read_all');
  expect(modelToolName('docs', 'x'.repeat(100))).toHaveLength(64);
});

it('reads an approval policy per tool', () => {
  expect(needsApproval('never', 'a')).toBe(false);
  expect(needsApproval('always', 'a')).toBe(true);
  expect(needsApproval({ a: 'always' }, 'a')).toBe(true);
  expect(needsApproval({ a: 'always' }, 'b')).toBe(false);
});
