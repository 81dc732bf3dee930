// The one exception type of Canopy's domain: a stable code from the API's error table, a human message, and
// optional details (e.g. the invalid fields). Transports map the code to their own status.

import { statusOf, type ErrorCode } from './error-code';

export class CanopyException extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'CanopyException';
  }

  get status(): number {
    return statusOf(this.code);
  }

  static notFound(what: string): CanopyException {
    return new CanopyException('not_found', `${what} not found`);
  }

  static badRequest(message: string, details?: Record<string, unknown>): CanopyException {
    return new CanopyException('bad_request', message, details);
  }

  static unavailable(message: string, cause?: unknown): CanopyException {
    return new CanopyException('unavailable', message, undefined, { cause });
  }
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
  requestId: string;
}
