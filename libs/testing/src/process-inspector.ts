// Asks a process started with `--inspect=127.0.0.1:0` for its memory through the DevTools protocol: a full garbage
// collection first (HeapProfiler.collectGarbage), then process.memoryUsage(). What is left after a GC is what the
// process holds, so growth between two readings is retained memory, not garbage V8 has not collected yet. No code
// of the service takes part: the inspector is Node's own.

import WebSocket from 'ws';

export interface ProcessMemory {
  /** Resident set (MB): what the OS sees; V8 and malloc keep freed pages, so it lags behind the heap. */
  rssMb: number;
  /** V8 heap in use after a full GC (MB). */
  heapUsedMb: number;
  /** The same in bytes, unrounded (for per-item figures over many items). */
  heapUsedBytes: number;
  /** Memory of C++ objects bound to JS (Buffers and the like) (MB). */
  externalMb: number;
  arrayBuffersMb: number;
}

/** The inspector's WebSocket URL, from what the process printed at start. */
export function inspectorUrl(output: readonly string[]): string | null {
  return /Debugger listening on (ws:\/\/\S+)/.exec(output.join(''))?.[1] ?? null;
}

/** Collects garbage in the process behind `url`, then reads its memory. */
export async function memoryAfterGc(url: string, timeoutMs = 30_000): Promise<ProcessMemory> {
  const ws = new WebSocket(url);
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let next = 0;
  ws.on('message', (data: Buffer) => {
    const msg = JSON.parse(data.toString()) as { id?: number; result?: unknown; error?: { message: string } };
    const waiter = msg.id !== undefined ? pending.get(msg.id) : undefined;
    if (!waiter) return;
    pending.delete(msg.id!);
    if (msg.error) waiter.reject(new Error(msg.error.message));
    else waiter.resolve(msg.result);
  });
  const call = (method: string, params: Record<string, unknown> = {}) =>
    new Promise<unknown>((resolve, reject) => {
      const id = ++next;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  const timer = setTimeout(() => ws.terminate(), timeoutMs);
  try {
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('close', () => reject(new Error('inspector closed')));
    });
    // Twice: objects freed by the first collection's finalizers (weak callbacks) go in the second.
    await call('HeapProfiler.collectGarbage');
    await call('HeapProfiler.collectGarbage');
    const result = (await call('Runtime.evaluate', {
      expression: 'JSON.stringify(process.memoryUsage())',
      returnByValue: true,
    })) as { result: { value: string } };
    const m = JSON.parse(result.result.value) as Record<string, number>;
    const mb = (bytes: number | undefined) => Math.round(((bytes ?? 0) / 1_048_576) * 10) / 10;
    return {
      rssMb: mb(m.rss),
      heapUsedMb: mb(m.heapUsed),
      heapUsedBytes: m.heapUsed ?? 0,
      externalMb: mb(m.external),
      arrayBuffersMb: mb(m.arrayBuffers),
    };
  } finally {
    clearTimeout(timer);
    ws.close();
  }
}
