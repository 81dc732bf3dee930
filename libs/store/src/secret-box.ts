// Encryption at rest of per-tenant secrets (provider API keys): AES-256-GCM under the deployment's key, a fresh
// 96-bit nonce per value, the tenant id and the provider as associated data (a ciphertext moved to another
// tenant's row does not decrypt). Stored as `v1.<nonce>.<ciphertext+tag>`, base64url.

import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the encryption key must be 32 bytes');
    this.key = key;
  }

  /** A key as CANOPY_ENCRYPTION_KEY gives it: 64 hex digits or base64 / base64url of 32 bytes. */
  static parseKey(text: string): Buffer {
    const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
    if (key.length !== 32) throw new Error('the encryption key must be 32 bytes (64 hex digits or base64)');
    return key;
  }

  seal(plaintext: string, context: string): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `v1.${nonce.toString('base64url')}.${sealed.toString('base64url')}`;
  }

  /** The plaintext, or throws when the value was not sealed under this key and context. */
  open(sealed: string, context: string): string {
    const [version, nonce, body] = sealed.split('.');
    if (version !== 'v1' || !nonce || !body) throw new Error('not a sealed value');
    const data = Buffer.from(body, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(nonce, 'base64url'));
    decipher.setAAD(Buffer.from(context, 'utf8'));
    decipher.setAuthTag(data.subarray(data.length - 16));
    return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString(
      'utf8',
    );
  }
}

/**
 * The deployment's encryption key: CANOPY_ENCRYPTION_KEY; else, embedded (no REDIS_URL), one generated once and
 * kept in the data directory (`encryption.key`, 0600) so `npm start` needs no setup; else (a distributed deployment
 * that set none) null: provider keys cannot be stored, since every process must share the key.
 */
export function resolveEncryptionKey(config: {
  encryptionKey: string | null;
  redis: { url: string | null };
  database: { url: string | null; dataDir: string };
}): { key: Buffer; source: 'configured' | 'file' } | null {
  if (config.encryptionKey) return { key: SecretBox.parseKey(config.encryptionKey), source: 'configured' };
  // Only the embedded default (its database in the data directory too) keeps a generated key.
  if (config.redis.url || config.database.url) return null;
  const dir = resolve(config.database.dataDir);
  const file = join(dir, 'encryption.key');
  const read = () => ({
    key: SecretBox.parseKey(readFileSync(file, 'utf8').trim()),
    source: 'file' as const,
  });
  if (existsSync(file)) return read();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const key = randomBytes(32);
  try {
    writeFileSync(file, `${key.toString('base64')}\n`, { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return read(); // another process made it first
    throw err;
  }
  return { key, source: 'file' };
}
