// Signed file URLs: good for their file until they expire, and for nothing else.

import { FileUrlSigner } from './file-urls';

const FILE = '6f1c2a4e-8d3b-4c5a-9e7f-0123456789ab';
const OTHER = '6f1c2a4e-8d3b-4c5a-9e7f-0123456789ac';

function parts(url: string) {
  const u = new URL(url, 'http://x');
  return { expires: Number(u.searchParams.get('expires')), signature: u.searchParams.get('signature')! };
}

it('opens its own file until it expires, and no other file, expiry or key', () => {
  const signer = new FileUrlSigner('a'.repeat(40));
  const now = Date.UTC(2026, 0, 1);
  const { url, expiresAt } = signer.sign(FILE, 60, now);
  expect(url).toMatch(new RegExp(`^/v1/files/${FILE}/signed\\?expires=\\d+&signature=[\\w-]+$`));
  expect(expiresAt.getTime()).toBe(now + 60_000);
  const { expires, signature } = parts(url);
  expect(signer.verify(FILE, expires, signature, now)).toBe(true);
  expect(signer.verify(FILE, expires, signature, now + 61_000)).toBe(false);
  expect(signer.verify(OTHER, expires, signature, now)).toBe(false);
  expect(signer.verify(FILE, expires + 3_600, signature, now)).toBe(false);
  expect(new FileUrlSigner('b'.repeat(40)).verify(FILE, expires, signature, now)).toBe(false);
  expect(signer.verify(FILE, expires, `${signature}x`, now)).toBe(false);
});
