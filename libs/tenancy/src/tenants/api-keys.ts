// Tenant API keys: `ck_` + 32 random bytes (256 bits, base64url). Only the sha256 of a key is stored; the key
// itself is shown once, when created. The first characters are kept to let people tell their keys apart.

import { createHash, randomBytes } from 'node:crypto';

export const API_KEY_PREFIX = 'ck_';

export interface GeneratedApiKey {
  key: string;
  prefix: string;
  hash: string;
}

export function generateApiKey(): GeneratedApiKey {
  const key = `${API_KEY_PREFIX}${randomBytes(32).toString('base64url')}`;
  return { key, prefix: key.slice(0, 10), hash: hashApiKey(key) };
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

export function looksLikeApiKey(credential: string): boolean {
  return credential.startsWith(API_KEY_PREFIX) && credential.length >= 20 && credential.length <= 100;
}
