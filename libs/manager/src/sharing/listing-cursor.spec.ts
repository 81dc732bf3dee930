// The listing cursor: what it encodes comes back, and anything else is a 400 naming the field.

import { CanopyException } from '@canopy/common';
import { decodeCursor, encodeCursor } from './listing-cursor';

const position = { createdAt: '2026-12-07T10:00:00.000Z', id: '0b8f7a52-3a0c-4c55-9d3f-2f1f7f0e9a11' };

describe('listing cursor', () => {
  it('reads back the position it was made from', () => {
    expect(decodeCursor(encodeCursor(position))).toEqual(position);
  });

  it.each([
    ['not base64 JSON', '%%%'],
    ['JSON of another shape', Buffer.from('{"a":1}').toString('base64url')],
    ['a bad time', Buffer.from(JSON.stringify(['yesterday', position.id])).toString('base64url')],
    ['an id that is no uuid', Buffer.from(JSON.stringify([position.createdAt, '42'])).toString('base64url')],
  ])('refuses %s with 400 on cursor', (_, cursor) => {
    let error: unknown;
    try {
      decodeCursor(cursor);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(CanopyException);
    expect(error).toMatchObject({ code: 'bad_request', details: { field: 'cursor' } });
  });
});
