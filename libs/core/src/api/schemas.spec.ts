// unstorableTextPath: where in a request value lies text Postgres cannot store (NUL, an unpaired surrogate);
// refusedInput: either, or a key "__proto__", in one walk.

import { RESERVED_KEY_MESSAGE, refusedInput, unstorableTextPath } from './schemas';

const reservedKeyPath = (value: unknown) => {
  const refused = refusedInput(value);
  if (refused) expect(refused.message).toBe(RESERVED_KEY_MESSAGE);
  return refused?.path ?? null;
};

describe('refusedInput: a key "__proto__"', () => {
  // As a request body arrives: JSON.parse makes "__proto__" an own key (zod's records then drop it silently).
  const body = (json: string): unknown => JSON.parse(json);

  it('names the path of a "__proto__" key at any depth', () => {
    expect(reservedKeyPath(body('{"metadata": {"__proto__": "x", "team": "ops"}}'))).toEqual([
      'metadata',
      '__proto__',
    ]);
    expect(reservedKeyPath(body('{"opts": {"a": [{"__proto__": {}}]}}'))).toEqual([
      'opts',
      'a',
      0,
      '__proto__',
    ]);
    expect(reservedKeyPath(body('{"__proto__": 1}'))).toEqual(['__proto__']);
  });

  it('lets every other key and value through, "constructor", "prototype" and the text "__proto__" included', () => {
    expect(reservedKeyPath(body('{"constructor": "c", "prototype": {"proto": "__proto__"}}'))).toBeNull();
    expect(reservedKeyPath('__proto__')).toBeNull();
    expect(reservedKeyPath(null)).toBeNull();
  });
});

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
