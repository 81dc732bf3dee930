// What the page's origin does in production: serves the built page, mints Canopy user tokens for signed-in users
// (here a demo header, x-demo-user: use your own authentication), and forwards /v1 to Canopy (streams included),
// so the browser talks to Canopy with a user token while the tenant's API key stays on the server.

import { createReadStream, existsSync, statSync } from 'node:fs';
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { AddressInfo } from 'node:net';
import { extname, join, normalize, sep } from 'node:path';

export interface ExampleServerOptions {
  canopyUrl: string;
  /** The tenant's API key: never sent to the browser. */
  canopyKey: string;
  /** The built page (vite build's outDir). */
  root: string;
  port?: number;
  host?: string;
}

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.json': 'application/json',
  '.map': 'application/json',
};

export async function startExampleServer(
  options: ExampleServerOptions,
): Promise<{ url: string; close(): Promise<void> }> {
  const canopy = new URL(options.canopyUrl);
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: String(err) }));
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = new URL(req.url ?? '/', 'http://page').pathname;
    if (req.method === 'POST' && path === '/canopy-token') return mintToken(req, res);
    if (path.startsWith('/v1/')) return forward(req, res);
    if (req.method !== 'GET') {
      res.writeHead(405).end();
      return;
    }
    serveFile(path, res);
  }

  async function mintToken(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const user = req.headers['x-demo-user'];
    if (typeof user !== 'string' || !/^[\w.-]{1,64}$/.test(user)) {
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"sign in first"}');
      return;
    }
    const answer = await fetch(new URL('/v1/tokens', canopy), {
      method: 'POST',
      headers: { authorization: `Bearer ${options.canopyKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ userId: user, ttlSeconds: 900 }),
    });
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(await answer.text());
  }

  /** /v1 to Canopy as it is: method, headers, body and the answer streamed back (SSE included). */
  function forward(req: IncomingMessage, res: ServerResponse): void {
    const send = canopy.protocol === 'https:' ? httpsRequest : httpRequest;
    const headers = { ...req.headers, host: canopy.host };
    const upstream = send(new URL(req.url ?? '/', canopy), { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    // The browser went away (a reload, a stop): so does the request to Canopy.
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  function serveFile(path: string, res: ServerResponse): void {
    const relative = normalize(decodeURIComponent(path === '/' ? '/index.html' : path)).replace(
      /^([/\\])+/,
      '',
    );
    const file = join(options.root, relative);
    const inside = file.startsWith(options.root.endsWith(sep) ? options.root : options.root + sep);
    const target =
      inside && existsSync(file) && statSync(file).isFile() ? file : join(options.root, 'index.html');
    res.writeHead(200, { 'content-type': TYPES[extname(target)] ?? 'application/octet-stream' });
    createReadStream(target).pipe(res);
  }

  await new Promise<void>((resolve) =>
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', resolve),
  );
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
