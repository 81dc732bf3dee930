// The web UI as the api serves it, against the real app: the build's files at `/` and `/assets/*`, index.html for
// page loads anywhere else, the API and operations routes untouched (their 404s stay the API's error body), and a
// clear error instead of a crash when there is no build. A stand-in build is used: the real one is the journey
// test's business (apps/web/test).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startTestApp, type TestApp } from './support/test-app';

const INDEX = '<!doctype html><html><head><title>Canopy UI stand-in</title></head><body></body></html>';
const SCRIPT = 'console.log("stand-in");';

let dir: string;
let withBuild: TestApp;
let withoutBuild: TestApp;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-web-'));
  mkdirSync(join(dir, 'build', 'assets'), { recursive: true });
  mkdirSync(join(dir, 'empty'));
  writeFileSync(join(dir, 'build', 'index.html'), INDEX);
  writeFileSync(join(dir, 'build', 'assets', 'index-AbC123.js'), SCRIPT);
  withBuild = await startTestApp({ webDir: join(dir, 'build') });
  withoutBuild = await startTestApp({ webDir: join(dir, 'empty') });
});

afterAll(async () => {
  await withBuild?.close();
  await withoutBuild?.close();
  rmSync(dir, { recursive: true, force: true });
});

const page = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };

function expectApiError(body: unknown, code: string): void {
  expect(body).toEqual({
    error: expect.objectContaining({ code, message: expect.any(String) }),
    requestId: expect.any(String),
  });
}

describe('with a build', () => {
  it('serves index.html at / with a same-origin Content-Security-Policy', async () => {
    const res = await fetch(`${withBuild.url}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(await res.text()).toBe(INDEX);
    expect(res.headers.get('x-request-id')).toEqual(expect.any(String));
  });

  it('serves the hashed assets as immutable', async () => {
    const res = await fetch(`${withBuild.url}/assets/index-AbC123.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/javascript/);
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(await res.text()).toBe(SCRIPT);
  });

  it('answers a HEAD of / like its GET, without a body', async () => {
    const res = await fetch(`${withBuild.url}/`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toBe('');
  });

  it('answers index.html to a page load of any other path (the UI routes itself)', async () => {
    for (const path of ['/dashboard', '/sessions/abc/tree']) {
      const res = await fetch(`${withBuild.url}${path}`, { headers: page });
      expect({ path, status: res.status, body: await res.text() }).toEqual({
        path,
        status: 200,
        body: INDEX,
      });
    }
  });

  it('keeps the 404 error body for what is not a page load: fetches, missing assets, other methods', async () => {
    const json = await fetch(`${withBuild.url}/dashboard`, { headers: { accept: 'application/json' } });
    expect(json.status).toBe(404);
    expectApiError(await json.json(), 'not_found');

    const asset = await fetch(`${withBuild.url}/assets/index-gone.js`);
    expect(asset.status).toBe(404);
    expectApiError(await asset.json(), 'not_found');

    const post = await fetch(`${withBuild.url}/`, { method: 'POST', headers: page });
    expect(post.status).toBe(404);
    expectApiError(await post.json(), 'not_found');
  });

  it('leaves the API and operations routes untouched, page loads included', async () => {
    for (const path of ['/v1/nope', '/v1', '/docs/nope', '/metrics/nope', '/readyz/x']) {
      const res = await fetch(`${withBuild.url}${path}`, { headers: page });
      const body = await res.text();
      expect({ path, html: body.includes('stand-in') }).toEqual({ path, html: false });
    }
    const missing = await fetch(`${withBuild.url}/v1/nope`, { headers: page });
    expect(missing.status).toBe(404);
    expectApiError(await missing.json(), 'not_found');

    const health = await fetch(`${withBuild.url}/healthz`, { headers: page });
    expect(await health.json()).toEqual({ status: 'ok' });

    const docs = await fetch(`${withBuild.url}/docs`, { headers: page });
    expect(docs.status).toBe(200);
    expect(await docs.text()).toContain('swagger');

    const unauthorized = await fetch(`${withBuild.url}/v1/sessions`, { headers: page });
    expect(unauthorized.status).toBe(401);
    expectApiError(await unauthorized.json(), 'unauthorized');
  });

  it('serves nothing outside the build directory', async () => {
    for (const path of [
      '/..%2f..%2fpackage.json',
      '/assets/..%2f..%2f..%2fpackage.json',
      '/assets/%2e%2e%2f%2e%2e%2fpackage.json',
    ]) {
      const res = await fetch(`${withBuild.url}${path}`);
      const body = await res.text();
      expect({ path, leaked: body.includes('"dependencies"') }).toEqual({ path, leaked: false });
      expect(res.status).toBeGreaterThanOrEqual(400);
    }
  });
});

describe('without a build', () => {
  it('answers a page load with a clear error and keeps serving the API', async () => {
    const res = await fetch(`${withoutBuild.url}/`, { headers: page });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { error: { message: string } };
    expectApiError(body, 'unavailable');
    expect(body.error.message).toContain('the web UI is not built');
    expect(body.error.message).toContain('npm run build:web');

    const health = await fetch(`${withoutBuild.url}/healthz`);
    expect(await health.json()).toEqual({ status: 'ok' });
  });
});
