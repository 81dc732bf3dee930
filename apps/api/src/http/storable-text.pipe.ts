// A global pipe ahead of the schemas: no body, query or path parameter may carry text Postgres cannot store
// (a NUL character, an unpaired UTF-16 surrogate). Such input is a bad_request naming the field, like any
// invalid field, instead of a database error (500) or a misleading one (jsonb's invalid_text_representation).
// Nor a key `__proto__`, which the schemas would drop without a word (the request succeeding, the value lost).

import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { refusedInput } from '@canopy/core';

@Injectable()
export class StorableTextPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'custom') return value;
    const refused = refusedInput(value);
    if (!refused) return value;
    const { message } = refused;
    const path = [
      ...(metadata.type === 'param' && metadata.data ? [metadata.data] : []),
      ...refused.path,
    ].join('.');
    throw CanopyException.badRequest(`invalid request: ${path || '(body)'}: ${message}`, {
      issues: [{ path, message }],
    });
  }
}
