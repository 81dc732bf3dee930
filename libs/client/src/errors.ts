// Errors of the Canopy API, typed by their stable codes (API.md "Errors"), plus the two a client meets on its own
// side: the service could not be reached, or a request was aborted.

import { codeForStatus, type ErrorCode as CoreErrorCode } from '@canopy/core';

/** The codes the API answers with (API.md), as the service defines them. */
export type ApiErrorCode = CoreErrorCode;

/** `network_error`: no answer (connection refused, reset, DNS); `aborted`: the caller's signal fired. */
export type ClientErrorCode = 'network_error' | 'aborted';

export type ErrorCode = ApiErrorCode | ClientErrorCode;

export interface CanopyErrorInit {
  code: ErrorCode;
  message: string;
  /** HTTP status; 0 when there was no answer. */
  status: number;
  requestId?: string | null;
  details?: Record<string, unknown> | null;
  /** From `Retry-After` on a 429 or 503. */
  retryAfterMs?: number | null;
  cause?: unknown;
}

export class CanopyError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly requestId: string | null;
  readonly details: Record<string, unknown> | null;
  readonly retryAfterMs: number | null;

  constructor(init: CanopyErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'CanopyError';
    this.code = init.code;
    this.status = init.status;
    this.requestId = init.requestId ?? null;
    this.details = init.details ?? null;
    this.retryAfterMs = init.retryAfterMs ?? null;
  }
}

/** True when `err` is a CanopyError (of one of `codes`, when given). */
export function isCanopyError(err: unknown, ...codes: ErrorCode[]): err is CanopyError {
  return err instanceof CanopyError && (codes.length === 0 || codes.includes(err.code));
}

/** A CanopyError from an API error answer (or from a body that is not one: a proxy's page, say). */
export function errorFromResponse(status: number, body: unknown, headers: Headers): CanopyError {
  const envelope = isRecord(body) && isRecord(body.error) ? body.error : null;
  const code =
    envelope && typeof envelope.code === 'string' ? (envelope.code as ErrorCode) : codeForStatus(status);
  const message =
    envelope && typeof envelope.message === 'string'
      ? envelope.message
      : `HTTP ${status} from the Canopy API`;
  return new CanopyError({
    code,
    message,
    status,
    requestId:
      (isRecord(body) && typeof body.requestId === 'string' ? body.requestId : null) ??
      headers.get('x-request-id'),
    details: envelope && isRecord(envelope.details) ? envelope.details : null,
    retryAfterMs: retryAfterMs(headers.get('retry-after')),
  });
}

/** `Retry-After` as milliseconds (seconds or an HTTP date); null when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number = Date.now()): number | null {
  if (value === null || value.trim() === '') return null;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
