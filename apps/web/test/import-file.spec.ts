// Reading a file chosen for import: which format, one conversation or many, and what is wrong with a bad one.

import { detectFormat, planImport, withoutSessionId } from '../src/import-file';

const openai = [
  { role: 'system', content: 'be brief' },
  { role: 'user', content: 'hi' },
];
const anthropic = {
  system: 'be brief',
  messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
};
const chatgpt = { title: 'x', mapping: { a: { id: 'a', children: [] } }, current_node: 'a' };
const canopyDoc = { format: 'canopy', version: 1, session: { id: 'abc', title: 't' }, tree: {} };

describe('detectFormat', () => {
  it('reads each format from its shape', () => {
    expect(detectFormat(canopyDoc)).toBe('canopy');
    expect(detectFormat(chatgpt)).toBe('chatgpt');
    expect(detectFormat(openai)).toBe('openai');
    expect(detectFormat({ model: 'gpt', messages: openai })).toBe('openai');
    expect(detectFormat(anthropic)).toBe('anthropic');
    expect(
      detectFormat([{ role: 'assistant', content: [{ type: 'tool_use', id: '1', name: 'x', input: {} }] }]),
    ).toBe('anthropic');
  });

  it('answers null for anything else', () => {
    expect(detectFormat({ hello: 'world' })).toBeNull();
    expect(detectFormat(42)).toBeNull();
    expect(detectFormat(['a'])).toBeNull();
  });
});

describe('planImport', () => {
  it('imports one JSON conversation in its detected or chosen format', () => {
    expect(planImport(JSON.stringify(openai), 'auto')).toEqual({
      kind: 'one',
      format: 'openai',
      data: openai,
    });
    expect(planImport(JSON.stringify(openai), 'anthropic')).toMatchObject({
      kind: 'one',
      format: 'anthropic',
    });
  });

  it("imports a ChatGPT export's conversations.json array one conversation a line", () => {
    const plan = planImport(JSON.stringify([chatgpt, chatgpt]), 'auto');
    expect(plan).toMatchObject({ kind: 'many', format: 'chatgpt', count: 2 });
    expect(
      plan.kind === 'many' &&
        plan.ndjson
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as unknown),
    ).toEqual([chatgpt, chatgpt]);
  });

  it('imports NDJSON in the format of its first line, blank lines skipped', () => {
    const text = `${JSON.stringify(canopyDoc)}\n\n${JSON.stringify(canopyDoc)}\n`;
    expect(planImport(text, 'auto')).toMatchObject({ kind: 'many', format: 'canopy', count: 2 });
  });

  it('says what is wrong with a file it cannot read', () => {
    expect(planImport('  \n', 'auto')).toEqual({ kind: 'invalid', message: 'The file is empty.' });
    expect(planImport('not json', 'auto')).toEqual({ kind: 'invalid', message: 'The file is not JSON.' });
    expect(planImport(`${JSON.stringify(openai)}\n{oops`, 'auto')).toMatchObject({
      kind: 'invalid',
      message: expect.stringMatching(/^Line 2 is not JSON/) as unknown,
    });
    expect(planImport('{"hello": "world"}', 'auto')).toMatchObject({
      kind: 'invalid',
      message: expect.stringMatching(/^The file is not a conversation Canopy can read/) as unknown,
    });
  });
});

describe('withoutSessionId', () => {
  it('drops the session id of a canopy document and nothing else', () => {
    expect(withoutSessionId(canopyDoc)).toEqual({ ...canopyDoc, session: { title: 't' } });
    expect(withoutSessionId(openai)).toBe(openai);
  });
});
