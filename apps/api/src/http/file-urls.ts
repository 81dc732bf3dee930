// Short-lived signed URLs for a file's bytes, for what cannot send a credential (a browser's <img src>): the path
// carries the file id, an expiry and an HMAC-SHA256 of both under a key derived from the service's token secret.
// Whoever holds the URL reads that one file until it expires, and nothing else; a changed id or expiry fails.

import { createHmac, timingSafeEqual } from 'node:crypto';

export class FileUrlSigner {
  private readonly key: Buffer;

  constructor(secret: string) {
    this.key = createHmac('sha256', secret).update('canopy file url').digest();
  }

  sign(fileId: string, ttlSeconds: number, now = Date.now()): { url: string; expiresAt: Date } {
    const expires = Math.floor(now / 1000) + ttlSeconds;
    const signature = this.signature(fileId, expires);
    return {
      url: `/v1/files/${fileId}/signed?expires=${expires}&signature=${signature}`,
      expiresAt: new Date(expires * 1000),
    };
  }

  /** Whether the signature is this file's and expiry's, and the expiry not past. */
  verify(fileId: string, expires: number, signature: string, now = Date.now()): boolean {
    if (expires * 1000 < now) return false;
    const expected = Buffer.from(this.signature(fileId, expires));
    const given = Buffer.from(signature);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  private signature(fileId: string, expires: number): string {
    return createHmac('sha256', this.key).update(`${fileId}.${expires}`).digest('base64url');
  }
}
