import {
  BadRequestException,
  HttpException,
  NotFoundException,
  PayloadTooLargeException,
} from '@nestjs/common';
import { CanopyException } from '../errors/canopy.exception';
import { describe as describeError, isDependencyUnavailable, withBodyHint } from './all-exceptions.filter';

describe('describe (error -> API error)', () => {
  it('keeps a CanopyException code, message and details', () => {
    expect(describeError(new CanopyException('session_busy', 'a run is in flight', { runId: 'r1' }))).toEqual(
      {
        status: 409,
        code: 'session_busy',
        message: 'a run is in flight',
        details: { runId: 'r1' },
      },
    );
  });

  it('hides the message of an internal CanopyException', () => {
    expect(describeError(new CanopyException('internal', 'db password is hunter2'))).toMatchObject({
      status: 500,
      message: 'internal error',
    });
  });

  it.each([
    [new BadRequestException('bad'), 400, 'bad_request'],
    [new NotFoundException('Cannot GET /x'), 404, 'not_found'],
    [new PayloadTooLargeException(), 413, 'payload_too_large'],
    [new HttpException('slow down', 429), 429, 'rate_limited'],
    [new HttpException('teapot', 418), 418, 'bad_request'],
  ])('maps Nest HTTP exceptions by status (%#)', (exception, status, code) => {
    expect(describeError(exception)).toMatchObject({ status, code });
  });

  it('maps body-parser errors by their type', () => {
    const tooLarge = Object.assign(new Error('request entity too large'), {
      status: 413,
      type: 'entity.too.large',
    });
    expect(describeError(tooLarge)).toMatchObject({ status: 413, code: 'payload_too_large' });
    const charset = Object.assign(new Error('unsupported charset'), {
      status: 415,
      type: 'charset.unsupported',
    });
    expect(describeError(charset)).toMatchObject({ status: 415, code: 'unsupported_media_type' });
  });

  it('answers anything unknown with a bare 500 that reveals nothing', () => {
    const d = describeError(new TypeError("Cannot read properties of undefined (reading 'secret')"));
    expect(d).toEqual({ status: 500, code: 'internal', message: 'internal error' });
    expect(describeError('a string')).toMatchObject({ status: 500 });
    expect(describeError(null)).toMatchObject({ status: 500 });
  });

  it('never shows the message of a 5xx HttpException', () => {
    expect(describeError(new HttpException('stack at db.ts:12', 502))).toEqual({
      status: 502,
      code: 'internal',
      message: 'internal error',
    });
  });
});

describe('withBodyHint (no JSON body parsed)', () => {
  const zodFailure = Object.assign(new BadRequestException('Validation failed'), {
    getZodError: () => ({
      issues: [{ path: [], message: 'Invalid input: expected object, received undefined' }],
    }),
  });

  it('says application/json was expected, naming what the request sent', () => {
    const d = withBodyHint(describeError(zodFailure), 'application/x-www-form-urlencoded', undefined);
    expect(d).toMatchObject({ status: 400, code: 'bad_request', details: { expected: 'application/json' } });
    expect(d.message).toBe(
      'the request body must be JSON sent with "content-type: application/json" (this request had content-type application/x-www-form-urlencoded)',
    );
    expect(withBodyHint(describeError(zodFailure), undefined, undefined).message).toContain(
      '(this request had no content-type)',
    );
  });

  it('leaves field errors and parsed bodies alone', () => {
    const field = Object.assign(new BadRequestException('Validation failed'), {
      getZodError: () => ({ issues: [{ path: ['model'], message: 'Required' }] }),
    });
    expect(withBodyHint(describeError(field), undefined, undefined).message).toBe(
      'invalid request: model: Required',
    );
    expect(withBodyHint(describeError(zodFailure), 'application/json', null).message).toMatch(
      /^invalid request/,
    );
  });
});

describe('dependency failures', () => {
  it.each([
    Object.assign(new Error('Reached the max retries per request limit (which is 20).'), {
      name: 'MaxRetriesPerRequestError',
    }),
    new Error('Command timed out'),
    new Error('Connection is closed.'),
  ])('answers 503 unavailable for a Redis that does not answer (%s)', (err) => {
    expect(isDependencyUnavailable(err)).toBe(true);
    expect(describeError(err)).toMatchObject({ status: 503, code: 'unavailable' });
  });

  it('leaves other errors as 500', () => {
    expect(describeError(new Error('boom'))).toMatchObject({ status: 500, code: 'internal' });
  });
});
