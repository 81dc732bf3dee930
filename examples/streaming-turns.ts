// A streaming chat view with turns(): the SDK keeps the session's UI turns current (each prompt with its reply,
// the one being written included) and calls you after every change; render() turns a view into markup. The same
// function fits any UI library: call it (or your component) from the subscription.
//
//   CANOPY_URL=http://localhost:3000 CANOPY_KEY=ck_... npx tsx examples/streaming-turns.ts "Hello there"
//
// In a browser, `credential` is usually a user token your backend minted (see token-backend.ts).

import { Canopy, turnText, type LiveTurnsView } from '@canopy/client';

/** The chat as HTML: one article per turn, the one streaming marked, a cancelled or failed run kept visible. */
export function render(view: LiveTurnsView): string {
  const turns = view.turns.map(
    (turn) =>
      `<article class="turn ${turn.status}">` +
      `<p class="user">${escape(turnText(turn, 'user'))}</p>` +
      `<p class="assistant">${escape(turnText(turn, 'assistant'))}${turn.status === 'streaming' ? '▍' : ''}</p>` +
      `</article>`,
  );
  const interrupted = view.interrupted?.turns.map(
    (turn) =>
      `<article class="turn ${view.interrupted!.status}"><p class="user">${escape(turnText(turn, 'user'))}</p>` +
      `<p class="assistant">${escape(turnText(turn, 'assistant'))} (${view.interrupted!.status})</p></article>`,
  );
  return [...turns, ...(interrupted ?? [])].join('\n');
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const canopy = new Canopy({
  baseUrl: process.env.CANOPY_URL ?? 'http://localhost:3000',
  credential: process.env.CANOPY_KEY ?? '',
});
const { session } = await canopy.sessions.create({ model: 'mock:echo', opts: { delayMs: 20 } });
const live = session.turns();
let frames = 0;
let last = '';
live.subscribe((view) => {
  frames++;
  last = render(view); // a UI would patch the page here (React: setState(view))
});
await live.ready();
await session.prompt(process.argv[2] ?? 'Hello from the streaming example');
// Until the reply is complete: idle, and its turn committed.
const done = await live.until(
  (v) => v.session.status === 'idle' && v.turns.length === 1 && v.turns[0]!.id !== null,
);
await live.close();
console.log(JSON.stringify({ frames, reply: turnText(done.turns[0]!, 'assistant'), html: last }));
