// Preparation steps shared by the README's commands (npm start, npm test, npm run bench). Plain Node with no
// dependencies, because the first of them installs the dependencies. Each step is skipped when its inputs have
// not changed since it last ran (a hash stamp), so repeated runs start fast.

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const bin = (name) => join(root, 'node_modules', '.bin', name);

/** When this command started: each step says how far in it begins, so a slow step shows. */
const startedAt = Date.now();

export function log(message) {
  const at = ((Date.now() - startedAt) / 1000).toFixed(0).padStart(4);
  process.stderr.write(`\x1b[2m[canopy ${at} s]\x1b[0m ${message}\n`);
}

export function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', ...options });
  if (result.error) throw result.error;
  if (result.status !== 0) {
    const err = new Error(
      `${relative(root, command) || command} ${args.join(' ')} exited with ${result.status ?? result.signal}`,
    );
    err.exitCode = result.status ?? 1;
    throw err;
  }
}

/** run, without blocking: resolves when the command exits 0, rejects as run throws otherwise. */
export function runAsync(command, args, options = {}) {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(command, args, { cwd: root, stdio: 'inherit', ...options });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) return resolvePromise();
      const err = new Error(
        `${relative(root, command) || command} ${args.join(' ')} exited with ${code ?? signal}`,
      );
      err.exitCode = code ?? 1;
      reject(err);
    });
  });
}

function hashOf(parts) {
  const h = createHash('sha256');
  for (const p of parts) h.update(String(p)).update('\0');
  return h.digest('hex');
}

/** Whether a step's stamp says it ran on these inputs already. */
function isStamped(stampFile, hash) {
  return existsSync(stampFile) && readFileSync(stampFile, 'utf8') === hash;
}

/** Records that a step ran on these inputs (written once it succeeded). */
function stamp(stampFile, hash) {
  mkdirSync(dirname(stampFile), { recursive: true });
  writeFileSync(stampFile, hash);
}

function stamped(stampFile, hash, action) {
  if (isStamped(stampFile, hash)) return false;
  action();
  stamp(stampFile, hash);
  return true;
}

/**
 * npm install (from the lockfile) when package.json or the lockfile changed since the last install. Not `npm ci`:
 * npm 11 writes lockfiles without the other platforms' optional binaries (@swc/core-darwin-*, ...) and `npm ci`
 * then refuses them as out of sync.
 */
export function ensureDependencies() {
  const lock = join(root, 'package-lock.json');
  const fingerprint = () =>
    hashOf([
      readFileSync(join(root, 'package.json')),
      existsSync(lock) ? readFileSync(lock) : '',
      process.version,
    ]);
  const stamp = join(root, 'node_modules', '.canopy-install-stamp');
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === fingerprint()) return;
  log('installing dependencies');
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error']);
  writeFileSync(stamp, fingerprint()); // after install: it may have normalised the lockfile
}

/** prisma generate when the schema or Prisma's version changed (or the client is missing). */
export function ensurePrismaClient() {
  const prismaVersion = JSON.parse(
    readFileSync(join(root, 'node_modules', 'prisma', 'package.json'), 'utf8'),
  ).version;
  const out = join(root, 'libs', 'store', 'src', 'generated', 'prisma');
  const stamp = join(out, '.schema-hash');
  const hash = hashOf([
    readFileSync(join(root, 'prisma', 'schema.prisma')),
    readFileSync(join(root, 'prisma.config.ts')),
    prismaVersion,
  ]);
  if (existsSync(join(out, 'client.ts')) && existsSync(stamp) && readFileSync(stamp, 'utf8') === hash) return;
  log('generating the Prisma client');
  run(bin('prisma'), ['generate', '--no-hints'], {
    env: {
      ...process.env,
      // generate never runs the schema engine, but the CLI wants to find one, and this machine cannot download it.
      PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
      CHECKPOINT_DISABLE: '1',
      PRISMA_HIDE_UPDATE_MESSAGE: '1',
    },
  });
  writeFileSync(stamp, hash);
}

const webRoot = join(root, 'apps', 'web');

function sourceFingerprint() {
  const parts = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, entry.name);
      if (entry.isDirectory()) {
        // The web UI is built by Vite on its own (ensureWebBuilt); it is no input of the Nest deployables.
        if (entry.name !== 'node_modules' && entry.name !== 'dist' && p !== webRoot) walk(p);
      } else if (/\.(ts|json)$/.test(entry.name) && !/\.(spec|int-spec|e2e-spec)\.ts$/.test(entry.name)) {
        const s = statSync(p);
        parts.push(relative(root, p), s.size, s.mtimeMs);
      }
    }
  };
  walk(join(root, 'apps'));
  walk(join(root, 'libs'));
  for (const f of ['tsconfig.json', 'nest-cli.json', 'package-lock.json']) {
    if (existsSync(join(root, f))) parts.push(f, statSync(join(root, f)).mtimeMs);
  }
  return hashOf(parts);
}

/** nest build of a deployable when any source changed. Returns the path of its entry file. */
/** What building a deployable takes: its stamp, the hash of its inputs, and the command. */
function buildPlan(project) {
  const entry = join(root, 'dist', 'apps', project, 'apps', project, 'src', 'main.js');
  const stamp = join(root, 'dist', '.build-stamps', project);
  if (!existsSync(entry) && existsSync(stamp)) writeFileSync(stamp, '');
  return {
    entry,
    stamp,
    hash: sourceFingerprint(),
    label: `building ${project}`,
    command: bin('nest'),
    args: ['build', project],
  };
}

export function ensureBuilt(project) {
  return build(buildPlan(project));
}

/** Runs a build plan unless its stamp says its inputs are unchanged; the stamp is written once it succeeded. */
async function buildAsync(plan) {
  if (isStamped(plan.stamp, plan.hash)) return;
  log(plan.label);
  await runAsync(plan.command, plan.args);
  stamp(plan.stamp, plan.hash);
}

/** Runs a build plan unless its stamp says its inputs are unchanged; answers what it built. */
function build(plan) {
  stamped(plan.stamp, plan.hash, () => {
    log(plan.label);
    run(plan.command, plan.args);
  });
  return plan.entry;
}

/** ensureBuilt of each project, then of the web UI (when `web`), one after the other without blocking. */
export async function ensureAllBuilt(projects, web) {
  for (const project of projects) await buildAsync(buildPlan(project));
  if (web) await buildAsync(webBuildPlan());
}

/** Sizes and times of the files under dir (recursively), skipping node_modules, dist and tests. */
function filesFingerprint(dir, parts, include) {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!['node_modules', 'dist', 'test'].includes(entry.name)) filesFingerprint(p, parts, include);
    } else if (include.test(entry.name) && !/\.(spec|int-spec|e2e-spec)\.tsx?$/.test(entry.name)) {
      const s = statSync(p);
      parts.push(relative(root, p), s.size, s.mtimeMs);
    }
  }
}

/** What building the web UI takes (see ensureWebBuilt). */
function webBuildPlan() {
  const out = join(root, 'dist', 'apps', 'web');
  const stamp = join(root, 'dist', '.build-stamps', 'web');
  const parts = [];
  filesFingerprint(webRoot, parts, /\.(tsx?|css|html|json|svg)$/);
  filesFingerprint(join(root, 'libs', 'client', 'src'), parts, /\.ts$/);
  filesFingerprint(join(root, 'libs', 'core', 'src'), parts, /\.ts$/);
  for (const f of ['tsconfig.json', 'package-lock.json']) {
    if (existsSync(join(root, f))) parts.push(f, statSync(join(root, f)).mtimeMs);
  }
  if (!existsSync(join(out, 'index.html')) && existsSync(stamp)) writeFileSync(stamp, '');
  return {
    entry: out,
    stamp,
    hash: hashOf(parts),
    label: 'building the web UI',
    command: bin('vite'),
    args: ['build', '--config', join(webRoot, 'vite.config.ts'), '--logLevel', 'warn'],
  };
}

/**
 * vite build of the web UI (apps/web, with the SDK and the core it bundles) into dist/apps/web when any of its
 * sources changed. Returns the directory the api serves.
 */
export function ensureWebBuilt() {
  return build(webBuildPlan());
}

export const CHROMIUM = '/usr/bin/chromium';

/**
 * The browser tests drive Debian's chromium (playwright-core cannot download browsers here). Installs the
 * package when it is missing; fails with a clear message when that is not possible.
 */
export async function ensureChromium() {
  if (existsSync(CHROMIUM)) return CHROMIUM;
  log(`${CHROMIUM} is missing: installing Debian's chromium for the browser tests (apt-get)`);
  const hint = `install it by hand (apt-get install chromium) and run the tests again`;
  if (process.platform !== 'linux' || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`the browser tests need ${CHROMIUM} and this machine has no apt-get: ${hint}`);
  }
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    throw new Error(`the browser tests need ${CHROMIUM}; installing it needs root: ${hint}`);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  // apt-get waits on the network and the disk more than on a core: it runs beside the builds.
  const aptGet = (args) =>
    new Promise((resolvePromise) => {
      const child = spawn('apt-get', args, { cwd: root, stdio: 'inherit', env });
      child.on('error', () => resolvePromise(-1));
      child.on('exit', (code) => resolvePromise(code ?? -1));
    });
  let status = await aptGet(['install', '-y', '-q', 'chromium']);
  if (status !== 0) {
    // A stale package index is the usual cause: refresh it once and try again.
    await aptGet(['update', '-q']);
    status = await aptGet(['install', '-y', '-q', 'chromium']);
  }
  if (status !== 0 || !existsSync(CHROMIUM)) {
    throw new Error(`could not install chromium (apt-get exited with ${status}): ${hint}`);
  }
  return CHROMIUM;
}

/** Runs fn, printing a failure as one clear line and exiting with its code. */
export async function main(fn) {
  try {
    await fn();
  } catch (err) {
    log(`\x1b[31m${err.message}\x1b[0m`);
    process.exit(err.exitCode ?? 1);
  }
}
