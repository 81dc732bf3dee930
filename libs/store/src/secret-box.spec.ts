import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveEncryptionKey, SecretBox } from './secret-box';

const KEY = Buffer.alloc(32, 7);

describe('SecretBox', () => {
  it('opens what it sealed, only under the same key and context', () => {
    const box = new SecretBox(KEY);
    const sealed = box.seal('sk-live-123', 'provider_keys:t1:openai');
    expect(sealed).toMatch(/^v1\.[\w-]+\.[\w-]+$/);
    expect(sealed).not.toContain('sk-live-123');
    expect(box.open(sealed, 'provider_keys:t1:openai')).toBe('sk-live-123');
    expect(box.seal('sk-live-123', 'c')).not.toBe(box.seal('sk-live-123', 'c')); // fresh nonce each time
    expect(() => box.open(sealed, 'provider_keys:t2:openai')).toThrow();
    expect(() => new SecretBox(Buffer.alloc(32, 8)).open(sealed, 'provider_keys:t1:openai')).toThrow();
    expect(() => box.open('garbage', 'c')).toThrow();
  });

  it('parses 64 hex digits or base64 of 32 bytes, and nothing shorter', () => {
    expect(SecretBox.parseKey(KEY.toString('hex'))).toEqual(KEY);
    expect(SecretBox.parseKey(KEY.toString('base64'))).toEqual(KEY);
    expect(() => SecretBox.parseKey('c2hvcnQ=')).toThrow('32 bytes');
  });
});

describe('resolveEncryptionKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'canopy-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const embedded = { encryptionKey: null, redis: { url: null }, database: { url: null, dataDir: dir } };

  it('generates one key on the embedded default, keeps it (0600) and reads it back', () => {
    const first = resolveEncryptionKey(embedded);
    expect(first?.source).toBe('file');
    expect(statSync(join(dir, 'encryption.key')).mode & 0o777).toBe(0o600);
    expect(resolveEncryptionKey(embedded)?.key).toEqual(first?.key);
    expect(readFileSync(join(dir, 'encryption.key'), 'utf8').trim()).toBe(first?.key.toString('base64'));
  });

  it('uses the configured key; has none for an external database or a distributed deployment without one', () => {
    expect(resolveEncryptionKey({ ...embedded, encryptionKey: KEY.toString('hex') })).toEqual({
      key: KEY,
      source: 'configured',
    });
    expect(resolveEncryptionKey({ ...embedded, redis: { url: 'redis://x' } })).toBeNull();
    expect(resolveEncryptionKey({ ...embedded, database: { url: 'postgres://x', dataDir: dir } })).toBeNull();
  });
});
