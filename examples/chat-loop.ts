// A chat in the terminal: every line you type is a prompt, and the reply streams back word by word.
//
//   CANOPY_URL=http://localhost:3000 CANOPY_KEY=ck_... npx tsx examples/chat-loop.ts
//
// CANOPY_MODEL picks the model (default mock:echo; see GET /v1/models for what the deployment offers).
// Lines can also be piped in: `printf 'hello\nagain\n' | npx tsx examples/chat-loop.ts`.

import { createInterface } from 'node:readline';
import { Canopy, isCanopyError, type Session } from '@canopy/client';

const canopy = new Canopy({
  baseUrl: process.env.CANOPY_URL ?? 'http://localhost:3000',
  credential: process.env.CANOPY_KEY ?? '',
});

/** Prompts, then writes the reply's text as it streams in, until the session is idle again. */
async function ask(session: Session, text: string): Promise<void> {
  const controller = new AbortController();
  const events = session.events({ signal: controller.signal });
  await events.next(); // the snapshot: the stream is open before the prompt, so no word is missed
  const { runId } = await session.prompt(text);
  process.stdout.write('assistant: ');
  for await (const event of events) {
    if (event.type === 'text_delta' && event.data.runId === runId) process.stdout.write(event.data.delta);
    if (event.type === 'error' && event.data.runId === runId)
      process.stdout.write(`[failed: ${event.data.message}]`);
    if (event.type === 'status' && event.data.status !== 'busy') break; // idle, or paused on a tool call
  }
  controller.abort();
  process.stdout.write('\n');
}

const { session } = await canopy.sessions.create({
  model: process.env.CANOPY_MODEL ?? 'mock:echo',
  title: 'Terminal chat',
});
console.log(`session ${session.id} (empty line or Ctrl-D to quit)`);
const lines = createInterface({ input: process.stdin, terminal: false });
for await (const line of lines) {
  if (line.trim() === '') break;
  try {
    await ask(session, line);
  } catch (err) {
    // A typed error: e.g. session_busy when a run is still going.
    console.log(isCanopyError(err) ? `error: ${err.code}: ${err.message}` : String(err));
  }
}
lines.close();
