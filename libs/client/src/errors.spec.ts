import { CanopyError, errorFromResponse, isCanopyError, retryAfterMs } from './errors';

describe('errorFromResponse', () => {
  it('reads the API error envelope', () => {
    const err = errorFromResponse(
      409,
      {
        error: { code: 'session_busy', message: 'a run is in flight', details: { runId: 'r1' } },
        requestId: 'q1',
      },
      new Headers(),
    );
    expect(err).toBeInstanceOf(CanopyError);
    expect(err).toMatchObject({
      code: 'session_busy',
      status: 409,
      message: 'a run is in flight',
      requestId: 'q1',
      details: { runId: 'r1' },
      retryAfterMs: null,
    });
    expect(isCanopyError(err, 'session_busy', 'session_paused')).toBe(true);
    expect(isCanopyError(err, 'not_found')).toBe(false);
  });

  it('falls back on the status for a body that is not an API error (a proxy page)', () => {
    const headers = new Headers({ 'x-request-id': 'from-header', 'retry-after': '3' });
    expect(errorFromResponse(503, '<html>bad gateway</html>', headers)).toMatchObject({
      code: 'unavailable',
      status: 503,
      requestId: 'from-header',
      retryAfterMs: 3000,
    });
    // The service's own mapping of a bare status (codeForStatus): a 4xx is the caller's, a 5xx the service's.
    expect(errorFromResponse(418, null, new Headers()).code).toBe('bad_request');
    expect(errorFromResponse(409, null, new Headers()).code).toBe('already_exists');
    expect(errorFromResponse(502, null, new Headers()).code).toBe('internal');
    expect(errorFromResponse(404, null, new Headers()).code).toBe('not_found');
  });
});

describe('retryAfterMs', () => {
  it('reads seconds and HTTP dates', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs('0.5')).toBe(500);
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(retryAfterMs('Sat, 21 Nov 2026 10:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Sat, 21 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(null)).toBeNull();
    expect(retryAfterMs('soon')).toBeNull();
  });
});
