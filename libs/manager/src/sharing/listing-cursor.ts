// The cursor of a listing ordered by creation time and id (share links, ratings): the last row's pair, opaque to
// clients (base64url JSON), checked when it comes back so that a forged one is a 400 naming the field.

import { CanopyException } from '@canopy/common';
import { isUuid } from '@canopy/store';

export interface ListingPosition {
  createdAt: string;
  id: string;
}

export function encodeCursor(row: ListingPosition): string {
  return Buffer.from(JSON.stringify([row.createdAt, row.id])).toString('base64url');
}

export function decodeCursor(cursor: string): ListingPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (
      typeof createdAt === 'string' &&
      !Number.isNaN(Date.parse(createdAt)) &&
      typeof id === 'string' &&
      isUuid(id)
    )
      return { createdAt, id };
  } catch {
    // falls through
  }
  throw CanopyException.badRequest('cursor: not a cursor of this listing', { field: 'cursor' });
}
