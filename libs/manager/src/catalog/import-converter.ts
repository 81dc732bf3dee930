// Where imports are prepared: inline when the input is small (a few milliseconds of CPU, not worth a hop), on the
// import thread otherwise. One thread per process, started on the first large import and stopped after a quiet
// minute; its requests queue in order, each answered by id. A thread that dies (out of memory on a hostile body)
// fails the requests it had and is started anew for the next.

import { extname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { prepareImport, type PreparationInput, type PreparationResult } from './import-preparation';

/** Inputs up to this many bytes are prepared on the calling thread. */
export const INLINE_PREPARATION_BYTES = 64 * 1024;

/** How long the thread stays after its last request. */
const IDLE_STOP_MS = 60_000;

export class ImportConverter {
  private worker: Worker | null = null;
  private readonly pending = new Map<
    number,
    { resolve: (r: PreparationResult) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;
  private idleTimer: NodeJS.Timeout | null = null;

  constructor(private readonly inlineBytes = INLINE_PREPARATION_BYTES) {}

  /** Prepares an import; `bytes`: the size of its input, which decides where. */
  prepare(input: PreparationInput, bytes: number): Promise<PreparationResult> {
    if (bytes <= this.inlineBytes) {
      try {
        return Promise.resolve(prepareImport(input));
      } catch (err) {
        return Promise.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    const worker = this.thread();
    const id = this.nextId++;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = null;
    return new Promise<PreparationResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ id, input });
    });
  }

  /** Ends the thread (the service stops); requests in flight fail. */
  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startThread();
    worker.on('message', (reply: { id: number; result?: PreparationResult; error?: string }) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      this.pending.delete(reply.id);
      if (reply.result) waiting.resolve(reply.result);
      else waiting.reject(new Error(`import preparation failed: ${reply.error ?? 'no answer'}`));
      if (this.pending.size === 0) this.stopWhenIdle(worker);
    });
    const fail = (why: string) => {
      if (this.worker === worker) this.worker = null;
      for (const [id, waiting] of this.pending) {
        this.pending.delete(id);
        waiting.reject(new Error(`the import thread ${why}`));
      }
    };
    worker.on('error', (err) => fail(`failed: ${err.message}`));
    worker.on('exit', (code) => fail(`exited (code ${code})`));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private stopWhenIdle(worker: Worker): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.worker === worker && this.pending.size === 0) {
        this.worker = null;
        void worker.terminate();
      }
    }, IDLE_STOP_MS);
    this.idleTimer.unref();
  }
}

/**
 * The thread runs import-conversion.worker beside this file: compiled JavaScript in a build; from the TypeScript
 * sources (tests, tsx) through tsx's CommonJS hook, the way the sources run.
 */
function startThread(): Worker {
  const ext = extname(__filename);
  const file = join(__dirname, `import-conversion.worker${ext}`);
  if (ext === '.ts') {
    return new Worker(`require('tsx/cjs'); require(${JSON.stringify(file)});`, { eval: true });
  }
  return new Worker(file);
}
