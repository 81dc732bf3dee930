// The raw road's parser for int4[] columns (sessions.path: a long conversation's active path is 10,000 ids, read
// by every run's start). node-postgres's generic array parser walks the text a character at a time and then
// parses each element: ~4 ms for 10,000 ids, against ~0.5 ms for a split. A one-dimensional array with no NULLs
// (the only kind Canopy stores) takes the split; anything else falls back to the generic parser.

import { types } from 'pg';

/** Postgres's type oid of int4[] (pg_type.typarray of int4). */
export const INT4_ARRAY_OID = 1007;

/** node-postgres's own parser of a type (its declared TypeId names only the scalar types). */
const parserOf = types.getTypeParser as (oid: number, format: 'text' | 'binary') => (value: never) => unknown;
const generic = parserOf(INT4_ARRAY_OID, 'text') as (text: string) => unknown;

export function parseInt4Array(text: string): unknown {
  if (text === '{}') return [];
  // '{1,2,3}' only: a nested array starts '{{', a NULL element spells N, bounds ('[0:2]={...}') start with '['.
  if (text.charCodeAt(0) !== 123 || text.charCodeAt(1) === 123 || text.includes('N')) return generic(text);
  return text.slice(1, -1).split(',').map(Number);
}

/** pg's `types` option: int4[] parsed by parseInt4Array, every other type as node-postgres parses it. */
export const fastIntArrayTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): unknown =>
    oid === INT4_ARRAY_OID && format !== 'binary'
      ? parseInt4Array
      : parserOf(oid, format ?? 'text')) as typeof types.getTypeParser,
};
