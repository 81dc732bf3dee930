// The service's own secrets: the admin key and the key that signs user tokens. Configured ones win; otherwise
// a single-node install keeps generated ones in its data directory (0600), so `npm start` needs no setup and the
// secrets survive restarts. Several api replicas must share configured secrets (CANOPY_ADMIN_KEY, CANOPY_JWT_SECRET).

import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CanopyConfig } from '@canopy/common';

export interface ServiceSecrets {
  adminKey: string;
  jwtSecret: string;
  /** Where generated secrets are kept, when any was generated. */
  file: string | null;
}

export function resolveSecrets(config: CanopyConfig): ServiceSecrets {
  if (config.adminKey && config.auth.jwtSecret) {
    return { adminKey: config.adminKey, jwtSecret: config.auth.jwtSecret, file: null };
  }
  const dir = resolve(config.database.dataDir);
  const file = join(dir, 'secrets.json');
  let stored: Partial<Record<'adminKey' | 'jwtSecret', string>> = {};
  if (existsSync(file)) stored = JSON.parse(readFileSync(file, 'utf8')) as typeof stored;
  const generated = {
    adminKey: stored.adminKey ?? `cadm_${randomBytes(24).toString('base64url')}`,
    jwtSecret: stored.jwtSecret ?? randomBytes(48).toString('base64url'),
  };
  if (!stored.adminKey || !stored.jwtSecret) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(file, `${JSON.stringify(generated, null, 2)}\n`, { mode: 0o600 });
    chmodSync(file, 0o600);
  }
  return {
    adminKey: config.adminKey ?? generated.adminKey,
    jwtSecret: config.auth.jwtSecret ?? generated.jwtSecret,
    file,
  };
}
