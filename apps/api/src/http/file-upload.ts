// Reading an upload off the request without buffering it: a multipart/form-data body's part named `file` (busboy
// streams it), or a raw body with its own content type. The first is what a browser's form or FormData sends, the
// second what `curl --data-binary` does.

import type { Readable } from 'node:stream';
import busboy from 'busboy';
import type { Request } from 'express';
import { CanopyException } from '@canopy/common';
import type { UploadInput } from '@canopy/store';

/** Fields a multipart upload may carry besides the file (ignored), and their size. */
const MULTIPART_LIMITS = { fields: 10, fieldSize: 4_096, files: 1, parts: 12, headerPairs: 50 };

/**
 * The upload a request carries. Resolves once the file's bytes start (a multipart body's preamble read); the
 * bytes themselves are read by whoever consumes `body`.
 */
export function uploadOf(req: Request, name: string | undefined): Promise<UploadInput> {
  const type = req.headers['content-type'];
  const length = lengthOf(req);
  if (typeof type === 'string' && /^multipart\/form-data\b/i.test(type)) return multipart(req, type);
  if (length === 0)
    return Promise.reject(
      CanopyException.badRequest('the request has no body: send the file', { field: 'file' }),
    );
  return Promise.resolve({
    name: name ?? 'file',
    declaredType: typeof type === 'string' ? type : null,
    length,
    body: req,
  });
}

function lengthOf(req: Request): number | null {
  const header = req.headers['content-length'];
  if (header === undefined) return req.headers['transfer-encoding'] ? null : 0;
  const n = Number(header);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

function multipart(req: Request, contentType: string): Promise<UploadInput> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: { ...req.headers, 'content-type': contentType }, limits: MULTIPART_LIMITS });
    } catch (err) {
      return reject(
        CanopyException.badRequest(`not a multipart body: ${(err as Error).message}`, { field: 'file' }),
      );
    }
    let settled = false;
    const fail = (err: CanopyException) => {
      if (settled) return;
      settled = true;
      req.unpipe(parser);
      reject(err);
    };
    parser.on('file', (field: string, stream: Readable, info: busboy.FileInfo) => {
      if (field !== 'file') {
        stream.resume();
        return;
      }
      if (settled) return void stream.resume();
      settled = true;
      // A part's error (the body cut short, malformed) reaches the file's stream: the upload fails with it.
      parser.on('error', (err: Error) =>
        stream.destroy(
          CanopyException.badRequest(`malformed multipart body: ${err.message}`, { field: 'file' }),
        ),
      );
      resolve({
        name: info.filename || 'file',
        declaredType: info.mimeType || null,
        length: null,
        body: stream,
      });
    });
    parser.on('error', (err: Error) =>
      fail(CanopyException.badRequest(`malformed multipart body: ${err.message}`, { field: 'file' })),
    );
    parser.on('close', () =>
      fail(CanopyException.badRequest('the multipart body has no part named "file"', { field: 'file' })),
    );
    req.on('error', () => fail(CanopyException.badRequest('the upload was cut off', { field: 'file' })));
    req.pipe(parser);
  });
}
