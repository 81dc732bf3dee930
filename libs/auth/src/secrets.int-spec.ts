// The secrets file on a real file system: it only ever holds secrets in effect, and the start-up line says where
// the admin key comes from without ever printing it.

import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '@canopy/common';
import { describeSecretSources, resolveSecrets } from './secrets';

const ADMIN = 'configured-admin-key-0123456789abcdef';
const JWT = 'configured-jwt-secret-0123456789abcdef-0123456789';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'canopy-secrets-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const configOf = (env: Record<string, string>) => loadConfig({ CANOPY_DATA_DIR: dir, ...env });
const fileOf = () => join(dir, 'secrets.json');
const stored = () => JSON.parse(readFileSync(fileOf(), 'utf8')) as Record<string, string>;

describe('resolveSecrets', () => {
  it('generates both secrets into a 0600 file when neither is configured, and keeps them across starts', () => {
    const first = resolveSecrets(configOf({}));
    expect(first.sources).toEqual({ adminKey: 'file', jwtSecret: 'file' });
    expect(first.file).toBe(fileOf());
    expect(stored()).toEqual({ adminKey: first.adminKey, jwtSecret: first.jwtSecret });
    expect(statSync(fileOf()).mode & 0o777).toBe(0o600);
    const again = resolveSecrets(configOf({}));
    expect(again).toEqual(first);
  });

  it('with only CANOPY_ADMIN_KEY set, writes only the token secret: the file holds no admin key', () => {
    const secrets = resolveSecrets(configOf({ CANOPY_ADMIN_KEY: ADMIN }));
    expect(secrets.adminKey).toBe(ADMIN);
    expect(secrets.sources).toEqual({ adminKey: 'configured', jwtSecret: 'file' });
    expect(stored()).toEqual({ jwtSecret: secrets.jwtSecret });
  });

  it('drops an admin key the file kept from before CANOPY_ADMIN_KEY was set, keeping the token secret', () => {
    const before = resolveSecrets(configOf({}));
    const after = resolveSecrets(configOf({ CANOPY_ADMIN_KEY: ADMIN }));
    expect(after.jwtSecret).toBe(before.jwtSecret); // tokens already handed out stay valid
    expect(stored()).toEqual({ jwtSecret: before.jwtSecret });
    expect(readFileSync(fileOf(), 'utf8')).not.toContain(before.adminKey);
  });

  it('with both configured, writes nothing and removes a file whose secrets are no longer in effect', () => {
    expect(resolveSecrets(configOf({ CANOPY_ADMIN_KEY: ADMIN, CANOPY_JWT_SECRET: JWT })).file).toBeNull();
    expect(existsSync(fileOf())).toBe(false);
    writeFileSync(fileOf(), JSON.stringify({ adminKey: 'cadm_stale', jwtSecret: 'stale' }));
    const secrets = resolveSecrets(configOf({ CANOPY_ADMIN_KEY: ADMIN, CANOPY_JWT_SECRET: JWT }));
    expect(secrets).toMatchObject({ adminKey: ADMIN, jwtSecret: JWT, file: null });
    expect(existsSync(fileOf())).toBe(false);
  });

  it('says where the admin key comes from, never the key', () => {
    const generated = resolveSecrets(configOf({}));
    const line = describeSecretSources(generated);
    expect(line).toContain(`admin key: generated, kept in ${fileOf()}`);
    expect(line).not.toContain(generated.adminKey);
    expect(line).not.toContain(generated.jwtSecret);

    const configured = describeSecretSources(resolveSecrets(configOf({ CANOPY_ADMIN_KEY: ADMIN })));
    expect(configured).toContain('admin key: configured (CANOPY_ADMIN_KEY)');
    expect(configured).not.toContain(ADMIN);
  });
});
