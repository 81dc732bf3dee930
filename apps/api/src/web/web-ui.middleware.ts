// The web UI (apps/web, built by Vite into dist/apps/web) served at `/`: its files with serve-static, and
// index.html for any other page a browser navigates to (the UI routes itself). The API and operations routes
// never reach it, so their answers (404 error bodies included) stay exactly what API.md says.

import { existsSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import serveStatic from 'serve-static';
import { CanopyException } from '@canopy/common';

/** Where `npm start` / `npm test` put the build, relative to the working directory (like the migrations). */
export const DEFAULT_WEB_DIR = 'dist/apps/web';

/** Path prefixes the UI never answers. */
const RESERVED = ['/v1', '/docs', '/healthz', '/readyz', '/metrics'];

/**
 * Same-origin only: the bundle's scripts and styles, fetch/SSE and WebSocket to this origin (`'self'` covers
 * ws: and wss: of the same host), images also from blob: URLs (the composer's previews of attached files), nothing
 * inline, no framing.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

function isReserved(path: string): boolean {
  return RESERVED.some((prefix) => path === prefix || path.startsWith(`${prefix}/`));
}

/** A page load: the root, or a browser navigation (it asks for HTML by name; fetch and curl accept anything). */
function wantsPage(req: Request): boolean {
  return req.path === '/' || (req.headers.accept ?? '').includes('text/html');
}

function setSecurityHeaders(res: Response): void {
  res.setHeader('content-security-policy', CONTENT_SECURITY_POLICY);
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('referrer-policy', 'no-referrer');
  res.setHeader('x-frame-options', 'DENY');
}

export function webUiMiddleware(dir: string = DEFAULT_WEB_DIR): RequestHandler {
  const root = resolve(dir);
  const index = join(root, 'index.html');
  const assets = join(root, 'assets') + sep;
  const files = serveStatic(root, {
    index: false,
    fallthrough: true,
    setHeaders: (res, path) => {
      setSecurityHeaders(res as Response);
      // Vite names every asset by its content hash: a new build means new names.
      res.setHeader(
        'cache-control',
        path.startsWith(assets) ? 'public, max-age=31536000, immutable' : 'no-cache',
      );
    },
  });

  const sendIndex = (req: Request, res: Response, next: NextFunction): void => {
    if (!wantsPage(req)) return next();
    // Checked on every page load, so a build made while the api runs is picked up.
    if (!existsSync(index)) {
      return next(
        new CanopyException(
          'unavailable',
          `the web UI is not built (${index} is missing): run \`npm start\`, which builds it, or \`npm run build:web\``,
        ),
      );
    }
    setSecurityHeaders(res);
    res.sendFile(index, { cacheControl: false, headers: { 'cache-control': 'no-cache' } }, (err) => {
      if (err && !res.headersSent) next(err);
    });
  };

  return (req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || isReserved(req.path)) return next();
    files(req, res, () => sendIndex(req, res, next));
  };
}
