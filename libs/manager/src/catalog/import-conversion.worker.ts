// The import thread: prepares imports (import-preparation.ts) one message at a time and answers each with its
// result. It runs at a lower CPU priority than the service's own thread (nice 10, Linux's per-thread priority):
// on a busy machine a conversion takes the CPU the requests of other tenants leave over.

import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { prepareImport, type PreparationInput } from './import-preparation';

try {
  setPriority(0, 10);
} catch {
  // Not permitted here: the thread runs at the service's priority.
}

parentPort!.on('message', (message: { id: number; input: PreparationInput }) => {
  let reply: { id: number; result?: unknown; error?: string };
  try {
    reply = { id: message.id, result: prepareImport(message.input) };
  } catch (err) {
    reply = { id: message.id, error: String((err as Error)?.stack ?? err) };
  }
  parentPort!.postMessage(reply);
});
