// The single place HTTP errors are shaped: every failure answers API.md's error body with a code and the
// request id; a 5xx never shows a stack or an internal message, and only 5xx are logged as errors. A 429 or 503
// carries Retry-After.

import { ArgumentsHost, Catch, ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { CanopyException, type ErrorBody } from '../errors/canopy.exception';
import { codeForStatus, statusOf, type ErrorCode } from '../errors/error-code';

interface Described {
  status: number;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('HttpError');

  catch(exception: unknown, host: ArgumentsHost): void {
    if (host.getType() !== 'http') throw exception;
    const http = host.switchToHttp();
    const req = http.getRequest<Request & { id?: unknown }>();
    const res = http.getResponse<Response>();
    const requestId = typeof req.id === 'string' || typeof req.id === 'number' ? String(req.id) : 'unknown';
    const d = withBodyHint(describe(exception), req.headers['content-type'], req.body);

    if (d.status >= 500) {
      this.logger.error({ err: exception, requestId, method: req.method, url: req.originalUrl }, d.message);
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    // A refusal to come back later says when: over a rate or operations limit (429), or a dependency down or
    // restarting (503).
    if (
      (d.code === 'rate_limited' || d.code === 'too_many_operations' || d.status === 503) &&
      !res.getHeader('retry-after')
    ) {
      const retry = d.details?.retryAfterSeconds;
      res.setHeader('retry-after', String(typeof retry === 'number' ? Math.ceil(retry) : 1));
    }
    const body: ErrorBody = {
      error: { code: d.code, message: d.message, ...(d.details ? { details: d.details } : {}) },
      requestId,
    };
    res.status(d.status).json(body);
  }
}

export function describe(exception: unknown): Described {
  if (exception instanceof CanopyException) {
    return {
      status: statusOf(exception.code),
      code: exception.code,
      message: exception.code === 'internal' ? 'internal error' : exception.message,
      details: exception.details,
    };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const zodError = (exception as { getZodError?: () => unknown }).getZodError?.();
    if (status === 400 && zodError) return validationError(zodError);
    const code = codeForStatus(status);
    return { status, code, message: status >= 500 ? 'internal error' : httpMessage(exception) };
  }
  if (isDependencyUnavailable(exception)) {
    return { status: 503, code: 'unavailable', message: 'a dependency (Redis) is unavailable; retry' };
  }
  // Errors raised by Express middleware (body-parser) carry a status and a type.
  const e = exception as { status?: unknown; statusCode?: unknown; type?: unknown } | null;
  const status =
    typeof e?.status === 'number' ? e.status : typeof e?.statusCode === 'number' ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    switch (e?.type) {
      case 'entity.parse.failed':
        return { status: 400, code: 'bad_request', message: 'the request body is not valid JSON' };
      case 'entity.too.large':
        return { status: 413, code: 'payload_too_large', message: 'the request body is too large' };
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return { status: 415, code: 'unsupported_media_type', message: 'unsupported body encoding' };
      default:
        return { status, code: codeForStatus(status), message: 'the request could not be processed' };
    }
  }
  return { status: 500, code: 'internal', message: 'internal error' };
}

/**
 * What ioredis (and so BullMQ) throws when Redis does not answer: a command timed out, the connection is closed,
 * or the offline queue gave up. Recognised by shape, so this filter needs no Redis client; the request can be
 * retried once Redis is back, so it answers 503, never 500.
 */
const REDIS_UNAVAILABLE =
  /^(Command timed out|Connection is closed\.|Stream isn't writeable|Reached the max retries per request limit)/;

export function isDependencyUnavailable(exception: unknown): boolean {
  const e = exception as { name?: unknown; message?: unknown } | null;
  if (e?.name === 'MaxRetriesPerRequestError') return true;
  return typeof e?.message === 'string' && REDIS_UNAVAILABLE.test(e.message);
}

/**
 * A body that failed its schema as a whole because none was parsed: the usual cause is a missing or wrong
 * content-type (curl -d sends a form), so the message says what was expected instead of "expected object".
 */
export function withBodyHint(d: Described, contentType: string | undefined, body: unknown): Described {
  const issues = d.details?.issues;
  const rootIssue = Array.isArray(issues) && issues.some((i) => (i as { path?: unknown }).path === '');
  if (d.code !== 'bad_request' || !rootIssue || body !== undefined) return d;
  const sent = contentType ? `content-type ${contentType.split(';')[0]!.trim()}` : 'no content-type';
  return {
    ...d,
    message: `the request body must be JSON sent with "content-type: application/json" (this request had ${sent})`,
    details: { ...d.details, expected: 'application/json' },
  };
}

function httpMessage(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const message = (response as { message?: unknown }).message;
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.join('; ');
  return exception.message;
}

/** A request that failed its schema: bad_request, with every offending field named. */
function validationError(zodError: unknown): Described {
  const issues = (
    (zodError as { issues?: Array<{ path: PropertyKey[]; message: string }> }).issues ?? []
  ).map((i) => ({ path: i.path.map(String).join('.'), message: i.message }));
  const first = issues[0];
  return {
    status: 400,
    code: 'bad_request',
    message: first ? `invalid request: ${first.path || '(body)'}: ${first.message}` : 'invalid request',
    details: { issues },
  };
}
