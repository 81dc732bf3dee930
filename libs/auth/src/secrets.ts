// The service's own secrets: the admin key and the key that signs user tokens. Configured ones win; otherwise
// a single-node install keeps generated ones in its data directory (0600), so `npm start` needs no setup and the
// secrets survive restarts. Several api replicas must share configured secrets (CANOPY_ADMIN_KEY, CANOPY_JWT_SECRET).
// The file only ever holds secrets in effect: a configured one is never written there, and one the file kept from
// before it was configured is removed, so reading the file never yields a key the service would refuse.

import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CanopyConfig } from '@canopy/common';

type SecretName = 'adminKey' | 'jwtSecret';

export interface ServiceSecrets {
  adminKey: string;
  jwtSecret: string;
  /** Where each secret comes from: the environment, or the generated secrets file. */
  sources: Record<SecretName, 'configured' | 'file'>;
  /** The secrets file, when it holds any secret in effect. */
  file: string | null;
}

const GENERATORS: Record<SecretName, () => string> = {
  adminKey: () => `cadm_${randomBytes(24).toString('base64url')}`,
  jwtSecret: () => randomBytes(48).toString('base64url'),
};

export function resolveSecrets(config: Pick<CanopyConfig, 'adminKey' | 'auth' | 'database'>): ServiceSecrets {
  const configured: Record<SecretName, string | null> = {
    adminKey: config.adminKey,
    jwtSecret: config.auth.jwtSecret,
  };
  const file = join(resolve(config.database.dataDir), 'secrets.json');
  const raw = existsSync(file) ? readFileSync(file, 'utf8') : null;
  const stored = raw === null ? null : parseStored(raw);
  const kept: Partial<Record<SecretName, string>> = {};
  for (const name of Object.keys(GENERATORS) as SecretName[]) {
    if (configured[name] === null) kept[name] = stored?.[name] ?? GENERATORS[name]();
  }
  const keptJson = `${JSON.stringify(kept, null, 2)}\n`;
  const anyKept = Object.keys(kept).length > 0;
  if (!anyKept) {
    // Both configured: a file left from an earlier start holds nothing in effect any more.
    if (raw !== null) rmSync(file, { force: true });
  } else if (raw !== keptJson) {
    mkdirSync(resolve(config.database.dataDir), { recursive: true, mode: 0o700 });
    writeFileSync(file, keptJson, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return {
    adminKey: configured.adminKey ?? kept.adminKey!,
    jwtSecret: configured.jwtSecret ?? kept.jwtSecret!,
    sources: {
      adminKey: configured.adminKey !== null ? 'configured' : 'file',
      jwtSecret: configured.jwtSecret !== null ? 'configured' : 'file',
    },
    file: anyKept ? file : null,
  };
}

/**
 * The start-up line that says where the admin key comes from (never the key): the variable that configures it,
 * or the file it was generated into and how to read it from there.
 */
export function describeSecretSources(secrets: ServiceSecrets): string {
  const admin =
    secrets.sources.adminKey === 'configured'
      ? 'admin key: configured (CANOPY_ADMIN_KEY)'
      : `admin key: generated, kept in ${secrets.file} (read it with: node -p "require('${secrets.file}').adminKey"; set CANOPY_ADMIN_KEY to choose your own)`;
  const jwt =
    secrets.sources.jwtSecret === 'configured'
      ? 'user-token secret: configured (CANOPY_JWT_SECRET)'
      : `user-token secret: generated, kept in ${secrets.file}`;
  return `${admin}; ${jwt}`;
}

function parseStored(raw: string): Partial<Record<SecretName, string>> {
  const parsed = JSON.parse(raw) as Record<string, unknown>;
  const out: Partial<Record<SecretName, string>> = {};
  for (const name of Object.keys(GENERATORS) as SecretName[]) {
    const value = parsed[name];
    if (typeof value === 'string' && value !== '') out[name] = value;
  }
  return out;
}
