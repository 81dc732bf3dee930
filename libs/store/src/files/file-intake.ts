// What an upload passes through on its way to storage: a Transform that counts its bytes, hashes them (sha256),
// keeps its first bytes for sniffing, and fails the stream the moment it passes its limit (413 payload_too_large,
// or 429 quota_exceeded when the tenant's storage quota is the nearer limit) — while it streams, not after. The
// media type is then sniffed from those first bytes (the `file-type` package's signatures), never taken from the
// client: a file with no signature is text when its bytes are UTF-8 without NULs (its declared text type or its
// name's extension say which), anything else application/octet-stream.

import { createHash, type Hash } from 'node:crypto';
import { Transform, type TransformCallback } from 'node:stream';
import { CanopyException } from '@canopy/common';

/** Enough for every signature file-type knows (its own sample size). */
const HEAD_BYTES = 4_100;

export interface IntakeLimits {
  /** FILES_MAX_BYTES. */
  maxBytes: number;
  /** What the tenant's storage quota leaves (null: no quota). */
  quotaBytesLeft: number | null;
}

export class FileMeter extends Transform {
  bytes = 0;
  private readonly hash: Hash = createHash('sha256');
  private head: Buffer[] = [];
  private headBytes = 0;

  constructor(private readonly limits: IntakeLimits) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.limits.maxBytes) return callback(tooLarge(this.limits.maxBytes));
    const left = this.limits.quotaBytesLeft;
    if (left !== null && this.bytes > left) return callback(overQuota(left));
    this.hash.update(chunk);
    if (this.headBytes < HEAD_BYTES) {
      const take = chunk.subarray(0, HEAD_BYTES - this.headBytes);
      this.head.push(Buffer.from(take));
      this.headBytes += take.length;
    }
    callback(null, chunk);
  }

  /** The hex sha256 of everything that passed (once it has all passed). */
  sha256(): string {
    return this.hash.digest('hex');
  }

  firstBytes(): Buffer {
    return Buffer.concat(this.head, this.headBytes);
  }
}

export function tooLarge(maxBytes: number): CanopyException {
  return new CanopyException(
    'payload_too_large',
    `a file may be at most ${maxBytes} bytes (FILES_MAX_BYTES)`,
    {
      limit: maxBytes,
    },
  );
}

function overQuota(left: number): CanopyException {
  return new CanopyException('quota_exceeded', `the tenant's file storage quota leaves ${left} bytes`, {
    metric: 'storage',
    left,
  });
}

/** Text types a model is sent as text (text_attachment in the model gateway): by their media type. */
export function isTextMediaType(mediaType: string): boolean {
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  return (
    type.startsWith('text/') ||
    /^application\/(json|ld\+json|xml|yaml|x-yaml|toml|x-sh|javascript|typescript|x-python|sql|graphql)$/.test(
      type,
    )
  );
}

const TEXT_BY_EXTENSION: Record<string, string> = {
  txt: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  json: 'application/json',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  html: 'text/html',
  htm: 'text/html',
  xml: 'application/xml',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  toml: 'application/toml',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/x-typescript',
  tsx: 'text/x-typescript',
  py: 'text/x-python',
  rb: 'text/x-ruby',
  go: 'text/x-go',
  rs: 'text/x-rust',
  java: 'text/x-java',
  c: 'text/x-c',
  h: 'text/x-c',
  cpp: 'text/x-c++',
  cs: 'text/x-csharp',
  sh: 'text/x-shellscript',
  sql: 'text/x-sql',
  css: 'text/css',
  svg: 'image/svg+xml',
};

type FileTypeModule = { fileTypeFromBuffer(buffer: Uint8Array): Promise<{ mime: string } | undefined> };
let fileTypeModule: Promise<FileTypeModule> | null = null;

/** file-type is an ES module: loaded once, on the first sniff. */
function fileType(): Promise<FileTypeModule> {
  fileTypeModule ??= import('file-type') as Promise<FileTypeModule>;
  return fileTypeModule;
}

/**
 * The media type of a file from its first bytes. `declared` (the client's content type) and the name only choose
 * among text types for bytes that are text; they never make binary bytes anything but what they are.
 */
export async function sniffMediaType(head: Buffer, declared: string | null, name: string): Promise<string> {
  if (head.length > 0) {
    const found = await (await fileType()).fileTypeFromBuffer(head);
    if (found) return found.mime;
  }
  if (!looksLikeText(head)) return 'application/octet-stream';
  const byName = TEXT_BY_EXTENSION[name.split('.').pop()?.toLowerCase() ?? ''];
  // SVG is markup a browser runs scripts in: kept as text, never served as an image.
  if (byName && byName !== 'image/svg+xml') return byName;
  const claimed = declared?.split(';')[0]?.trim().toLowerCase();
  if (claimed && isTextMediaType(claimed) && claimed !== 'text/html') return claimed;
  return 'text/plain';
}

function looksLikeText(head: Buffer): boolean {
  if (head.includes(0)) return false;
  try {
    // stream: a multi-byte character cut at the end of the sample is not an error.
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/** A client's file name as kept: its last path segment, without control characters, at most 255 characters. */
export function fileNameOf(raw: string): string {
  const last = raw.split(/[\\/]/).pop() ?? '';
  const clean = [...last]
    .filter((c) => c.charCodeAt(0) > 0x1f && c.charCodeAt(0) !== 0x7f)
    .join('')
    .trim()
    .slice(0, 255);
  return clean === '' ? 'file' : clean;
}
