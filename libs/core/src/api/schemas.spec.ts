// unstorableTextPath: where in a request value lies text Postgres cannot store (NUL, an unpaired surrogate).

import { unstorableTextPath } from './schemas';

describe('unstorableTextPath', () => {
  it('finds nothing in ordinary text, emoji (paired surrogates) and non-string values', () => {
    expect(unstorableTextPath({ a: 'héllo 👋', b: [1, true, null, { c: '\u2028\ufeff' }] })).toBeNull();
    expect(unstorableTextPath('plain')).toBeNull();
    expect(unstorableTextPath(42)).toBeNull();
  });

  it('names the path of a NUL or an unpaired surrogate in a value or a key', () => {
    expect(unstorableTextPath('a\u0000b')).toEqual([]);
    expect(unstorableTextPath({ title: 'x', opts: { list: ['ok', 'lone \ud800'] } })).toEqual([
      'opts',
      'list',
      1,
    ]);
    expect(unstorableTextPath({ metadata: { 'k\u0000': 1 } })).toEqual(['metadata', 'k\u0000']);
    expect(unstorableTextPath({ text: 'trailing low \udc00' })).toEqual(['text']);
    expect(unstorableTextPath({ text: '\udc00\ud800' })).toEqual(['text']);
  });

  it('walks values nested 10,000 levels deep without recursion', () => {
    let deep: unknown = 'nul\u0000';
    for (let i = 0; i < 10_000; i++) deep = [deep];
    expect(unstorableTextPath(deep)).toHaveLength(10_000);
  });
});
