// Your backend, minting Canopy user tokens for your signed-in users: the browser never sees your API key, and a
// user token only reaches its own user's sessions. Here "signed in" is a demo header (x-demo-user); use your
// own authentication.
//
//   CANOPY_URL=http://localhost:3000 CANOPY_KEY=ck_... npx tsx examples/token-backend.ts
//
// It listens on PORT (default 8787): POST /canopy-token answers {token, expiresAt, canopyUrl}. With --demo it
// then plays the browser once (fetches a token, chats with it as that user) and exits.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Canopy } from '@canopy/client';

const canopyUrl = process.env.CANOPY_URL ?? 'http://localhost:3000';
// The tenant's API key stays on the server.
const canopy = new Canopy({ baseUrl: canopyUrl, credential: process.env.CANOPY_KEY ?? '' });

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method !== 'POST' || req.url !== '/canopy-token') {
    res.writeHead(404).end();
    return;
  }
  const user = req.headers['x-demo-user'];
  if (typeof user !== 'string' || !/^[\w.-]{1,64}$/.test(user)) {
    res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":"sign in first"}');
    return;
  }
  // Short-lived: the page asks again when it expires.
  const { token, expiresAt } = await canopy.tokens.create(user, 900);
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ token, expiresAt, canopyUrl }));
}

const server = createServer((req, res) => {
  handle(req, res).catch((err: unknown) => {
    res.writeHead(502, { 'content-type': 'application/json' }).end(JSON.stringify({ error: String(err) }));
  });
});
await new Promise<void>((resolve) =>
  server.listen(
    Number(process.env.PORT ?? (process.argv.includes('--demo') ? 0 : 8787)),
    '127.0.0.1',
    resolve,
  ),
);
const port = (server.address() as AddressInfo).port;
console.error(`token backend on http://127.0.0.1:${port}/canopy-token`);

if (process.argv.includes('--demo')) {
  // What the browser does: get a token from your backend, then talk to Canopy directly with it.
  const answer = await fetch(`http://127.0.0.1:${port}/canopy-token`, {
    method: 'POST',
    headers: { 'x-demo-user': 'alice' },
  });
  const { token } = (await answer.json()) as { token: string };
  const asAlice = new Canopy({ baseUrl: canopyUrl, credential: token });
  const { session, info } = await asAlice.sessions.create({ model: 'mock:echo' });
  const result = await session.run('hi, it is alice');
  const refused = await fetch(`http://127.0.0.1:${port}/canopy-token`, { method: 'POST' });
  console.log(
    JSON.stringify({
      userId: info.userId,
      reply: result.finalResponse,
      sessionsSeen: (await asAlice.sessions.list()).data.length,
      withoutSignIn: refused.status,
    }),
  );
  server.close();
}
