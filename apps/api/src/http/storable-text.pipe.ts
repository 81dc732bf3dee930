// A global pipe ahead of the schemas: no body, query or path parameter may carry text Postgres cannot store
// (a NUL character, an unpaired UTF-16 surrogate). Such input is a bad_request naming the field, like any
// invalid field, instead of a database error (500) or a misleading one (jsonb's invalid_text_representation).

import { Injectable, type ArgumentMetadata, type PipeTransform } from '@nestjs/common';
import { CanopyException } from '@canopy/common';
import { unstorableTextPath } from '@canopy/core';

const MESSAGE = 'must not contain NUL characters or unpaired surrogates';

@Injectable()
export class StorableTextPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type === 'custom') return value;
    const found = unstorableTextPath(value);
    if (!found) return value;
    const path = [...(metadata.type === 'param' && metadata.data ? [metadata.data] : []), ...found].join('.');
    throw CanopyException.badRequest(`invalid request: ${path || '(body)'}: ${MESSAGE}`, {
      issues: [{ path, message: MESSAGE }],
    });
  }
}
