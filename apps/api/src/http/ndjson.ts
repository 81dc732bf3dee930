// Newline-delimited JSON over HTTP: a request body read line by line as it arrives (each line bounded, a longer
// one reported and skipped, never buffered whole), and a response written line by line with backpressure.

import { StringDecoder } from 'node:string_decoder';
import type { Readable } from 'node:stream';
import type { Response } from 'express';

export const NDJSON = 'application/x-ndjson';

export type NdjsonLine = { line: number; text: string } | { line: number; error: string };

/** The lines of a stream, numbered from 1; a line over maxBytes becomes an error entry. */
export async function* ndjsonLines(body: Readable, maxBytes: number): AsyncGenerator<NdjsonLine> {
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  let line = 1;
  const finish = (): NdjsonLine => {
    const entry: NdjsonLine = tooLong
      ? { line, error: `line longer than ${maxBytes} bytes` }
      : { line, text: new StringDecoder('utf8').end(Buffer.concat(parts)).replace(/\r$/, '') };
    parts = [];
    size = 0;
    tooLong = false;
    line++;
    return entry;
  };
  for await (const chunk of body) {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    for (let nl = buf.indexOf(10); nl >= 0; nl = buf.indexOf(10)) {
      take(buf.subarray(0, nl));
      yield finish();
      buf = buf.subarray(nl + 1);
    }
    take(buf);
  }
  if (size > 0 || tooLong) yield finish();

  function take(piece: Buffer): void {
    if (tooLong || piece.length === 0) return;
    size += piece.length;
    if (size > maxBytes) {
      tooLong = true;
      parts = [];
    } else parts.push(piece);
  }
}

/** Writes one JSON value as a line, waiting while the client's buffer is full. */
export async function writeLine(res: Response, value: unknown): Promise<void> {
  if (!res.write(`${JSON.stringify(value)}\n`)) {
    await new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
}

/**
 * Answers 200 with the lines as NDJSON. The first line is read before the answer starts, so a bad cursor or an
 * unreachable database is an error answer, not a broken stream; mid-stream there is no status left to answer with:
 * the connection is cut (the client resumes from the last complete line's cursor), and a client that left stops
 * the reading.
 */
export async function streamNdjson(res: Response, lines: AsyncIterator<unknown>): Promise<void> {
  const first = await lines.next();
  res.status(200).type(NDJSON);
  res.flushHeaders();
  let closed = false;
  res.on('close', () => (closed = true));
  try {
    if (!first.done) await writeLine(res, first.value);
    for (let next = await lines.next(); !next.done && !closed; next = await lines.next()) {
      await writeLine(res, next.value);
    }
    res.end();
  } catch {
    res.destroy();
  } finally {
    await lines.return?.();
  }
}

/** Bytes of a size such as `20mb` (the config's form). */
export function bytesOf(size: string): number {
  const m = /^(\d+)(b|kb|mb)$/i.exec(size);
  if (!m) return 1_048_576;
  const unit = m[2]!.toLowerCase();
  return Number(m[1]) * (unit === 'mb' ? 1_048_576 : unit === 'kb' ? 1_024 : 1);
}
