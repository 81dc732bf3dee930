// The README's curl walkthrough, pasted as one block into bash against a freshly started service, as a new user
// runs it: the built api started like `npm start` starts it (embedded database in the working directory's
// .canopy, nothing configured), from a directory of its own. The block must run through to the live stream (cut
// after a few seconds here), with every id and key captured by the block itself, the regenerated reply differing
// from the first. The same block works when CANOPY_ADMIN_KEY is set, and the secrets file then holds no admin key.
// The start-up log says where the admin key comes from and never prints it.

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { eventually, freePort } from '@canopy/testing';
import { childEnv } from './support/child-env';

const ROOT = resolve(__dirname, '../../..');
const API_MAIN = join(ROOT, 'dist/apps/api/apps/api/src/main.js');
const CONFIGURED_ADMIN_KEY = 'readme-admin-key-0123456789abcdefghij';
/**
 * Each test starts the real api on a fresh embedded database (Postgres in WebAssembly applying every migration),
 * as `npm start` does: seconds on an idle machine, up to a minute on a busy one.
 */
const BOOTING_TEST_MS = 240_000;

interface Service {
  url: string;
  dir: string;
  output: string[];
  proc: ChildProcess;
}

const started: Service[] = [];

/**
 * Starts the built api as `npm start` does, in a directory of its own (its .canopy is the embedded database):
 * a fresh one, or the one of an earlier start (a restart).
 */
async function startService(env: Record<string, string> = {}, dir?: string): Promise<Service> {
  dir ??= mkdtempSync(join(tmpdir(), 'canopy-readme-'));
  const port = await freePort();
  const proc = spawn(process.execPath, [API_MAIN], {
    cwd: dir,
    env: childEnv(dir, {
      PORT: String(port),
      HOST: '127.0.0.1',
      CANOPY_MIGRATIONS_DIR: join(ROOT, 'prisma/migrations'),
      ...env,
    }),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  proc.stdout.on('data', (d: Buffer) => output.push(d.toString()));
  proc.stderr.on('data', (d: Buffer) => output.push(d.toString()));
  const service = { url: `http://127.0.0.1:${port}`, dir, output, proc };
  started.push(service);
  await eventually(
    async () => {
      if (proc.exitCode !== null) throw new Error(`the api exited:\n${output.join('')}`);
      expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
    },
    { timeoutMs: 180_000, intervalMs: 200 },
  );
  return service;
}

async function stop(service: Service): Promise<void> {
  if (service.proc.exitCode === null && service.proc.signalCode === null) {
    const exited = new Promise((r) => service.proc.once('exit', r));
    service.proc.kill('SIGTERM');
    await exited;
  }
}

afterAll(async () => {
  for (const service of started) await stop(service);
  for (const dir of new Set(started.map((s) => s.dir))) rmSync(dir, { recursive: true, force: true });
});

/** The first ```sh block after the walkthrough's heading, as the README has it. */
function walkthrough(): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## A first conversation with curl'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (!block) throw new Error('README.md has no sh block in "A first conversation with curl"');
  return block;
}

/** Runs the block in bash in the service's directory, pointed at its port, the live stream cut after 3 s. */
function runBlock(
  service: Service,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const block = walkthrough();
  expect(block).toContain('BASE=http://localhost:3000');
  const lines = block.trimEnd().split('\n');
  // The live stream is the last command: everything before it runs to completion first.
  expect(lines.at(-1)).toMatch(/^curl -N /);
  const script = block
    .replace('BASE=http://localhost:3000', `BASE=${service.url}`)
    .replace(/^curl -N /m, 'curl -sN --max-time 3 '); // -s: no progress meter on a pipe
  return new Promise((resolvePromise, reject) => {
    const bash = spawn('bash', ['-c', script], {
      cwd: service.dir,
      env: childEnv(service.dir, env),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    bash.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    bash.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => bash.kill('SIGKILL'), 60_000);
    bash.on('error', reject);
    bash.on('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/** What the block printed, line by line as JSON where it is JSON. */
function checkOutput(stdout: string): void {
  const [prompt, regenerated, turns, navigated, token] = stdout
    .split('\n')
    .slice(0, 5)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  // 3. The prompt's TurnResult: msg_1 is the prompt (node 1), msg_2 the reply (node 2).
  expect(prompt).toMatchObject({
    finalResponse: 'Echo #1: Hello, Canopy!',
    items: [
      { type: 'message', role: 'user', id: 'msg_1', text: 'Hello, Canopy!' },
      { type: 'message', role: 'assistant', id: 'msg_2', text: 'Echo #1: Hello, Canopy!' },
    ],
  });
  // 4. The regenerated reply differs, both versions are listed, and navigate went back to the first.
  expect(regenerated).toMatchObject({ finalResponse: 'Echo #2: Hello, Canopy!' });
  expect(turns).toMatchObject({ data: [{ id: 1, resId: 3, regens: [2, 3] }] });
  expect(navigated).toEqual({ path: [1, 2], head: 2 });
  // 5. A user token.
  expect(token).toMatchObject({ token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/) });
  // 6. The live stream: its snapshot, with the session as navigated.
  const live = stdout.split('\n').slice(5).join('\n');
  expect(live).toMatch(/^id: \d+\nevent: snapshot\ndata: /m);
  const snapshot = JSON.parse(/event: snapshot\ndata: (.*)/.exec(live)![1]!) as {
    tree: { path: number[] };
  };
  expect(snapshot.tree.path).toEqual([1, 2]);
}

describe('the README walkthrough', () => {
  let first: Service | undefined;

  it(
    'pastes and runs as one block against a fresh `npm start` (admin key generated into .canopy)',
    async () => {
      first = await startService();
      const { code, stdout, stderr } = await runBlock(first);
      // curl's exit code 28: the live stream was cut by --max-time, as intended; nothing else failed.
      expect({ code, stderr }).toEqual({ code: 28, stderr: '' });
      checkOutput(stdout);

      // The start-up log named the file the block read the admin key from, and never the key.
      const secrets = JSON.parse(readFileSync(join(first.dir, '.canopy/secrets.json'), 'utf8')) as {
        adminKey: string;
      };
      const log = first.output.join('');
      expect(log).toContain(`admin key: generated, kept in ${join(first.dir, '.canopy/secrets.json')}`);
      expect(log).not.toContain(secrets.adminKey);

      // Forgetting the content-type header: the answer says what was expected.
      const res = await fetch(`${first.url}/v1/admin/tenants`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${secrets.adminKey}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: '{"name":"acme"}',
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { message: string } }).error.message).toContain(
        '"content-type: application/json"',
      );
    },
    BOOTING_TEST_MS,
  );

  it(
    'runs the same after a restart with CANOPY_ADMIN_KEY set: the secrets file no longer holds an admin key',
    async () => {
      if (!first) throw new Error('the first start failed: nothing to restart');
      await stop(first);
      const generated = (
        JSON.parse(readFileSync(join(first.dir, '.canopy/secrets.json'), 'utf8')) as { adminKey: string }
      ).adminKey;
      const service = await startService({ CANOPY_ADMIN_KEY: CONFIGURED_ADMIN_KEY }, first.dir);
      // The generated key is not in effect any more, so the file (which the block would read) no longer has it.
      const stored = JSON.parse(readFileSync(join(service.dir, '.canopy/secrets.json'), 'utf8')) as object;
      expect(Object.keys(stored)).toEqual(['jwtSecret']);
      const log = service.output.join('');
      expect(log).toContain('admin key: configured (CANOPY_ADMIN_KEY)');
      expect(log).not.toContain(CONFIGURED_ADMIN_KEY);
      const old = await fetch(`${service.url}/v1/admin/tenants`, {
        headers: { authorization: `Bearer ${generated}` },
      });
      expect(old.status).toBe(401);

      const { code, stdout, stderr } = await runBlock(service, { CANOPY_ADMIN_KEY: CONFIGURED_ADMIN_KEY });
      expect({ code, stderr }).toEqual({ code: 28, stderr: '' });
      checkOutput(stdout);
    },
    BOOTING_TEST_MS,
  );
});
