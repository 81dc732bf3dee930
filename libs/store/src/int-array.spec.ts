import { types } from 'pg';
import { fastIntArrayTypes, INT4_ARRAY_OID, parseInt4Array } from './int-array';

const generic = (types.getTypeParser as (oid: number, format: 'text') => (text: string) => unknown)(
  INT4_ARRAY_OID,
  'text',
);

describe('parseInt4Array', () => {
  it.each(['{}', '{7}', '{1,2,3}', '{-5,0,2147483647}', '{1,NULL,3}', '{{1,2},{3,4}}', '[0:1]={4,5}'])(
    'reads %s as the generic parser does',
    (text) => {
      expect(parseInt4Array(text)).toEqual(generic(text));
    },
  );

  it('reads a 10,000-id path', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => i * 3 + 1);
    expect(parseInt4Array(`{${ids.join(',')}}`)).toEqual(ids);
  });

  it('is the parser the types option gives for int4[] only', () => {
    expect(
      (fastIntArrayTypes.getTypeParser as (oid: number, format: 'text') => unknown)(INT4_ARRAY_OID, 'text'),
    ).toBe(parseInt4Array);
    expect(fastIntArrayTypes.getTypeParser(types.builtins.INT4, 'text')).toBe(
      types.getTypeParser(types.builtins.INT4, 'text'),
    );
    expect(fastIntArrayTypes.getTypeParser(types.builtins.TEXT, 'text')).toBe(
      types.getTypeParser(types.builtins.TEXT, 'text'),
    );
  });
});
