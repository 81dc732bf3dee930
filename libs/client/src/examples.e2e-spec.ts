// The programs in examples/ run as a user runs them (tsx, ES modules, `import … from '@canopy/client'` resolved
// to the SDK's sources) against the booted service: the terminal chat loop, the streaming view on turns(), and
// the backend that mints user tokens.

import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { childEnv } from '../../../apps/api/test/support/child-env';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';
import { Canopy } from './index';

const ROOT = resolve(__dirname, '../../..');

let t: TestApp;
let key: string;
let canopy: Canopy;

beforeAll(async () => {
  t = await startTestApp();
  const admin = new Canopy({ baseUrl: t.url, credential: TEST_ADMIN_KEY });
  key = (await admin.admin.createTenant('examples')).apiKey;
  canopy = new Canopy({ baseUrl: t.url, credential: key });
});

afterAll(async () => {
  await t?.close();
});

/** Runs an example with tsx from the repository's root, as the README says, with this service's URL and key. */
function runExample(
  file: string,
  args: string[] = [],
  stdin = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join('examples', file), ...args], {
      cwd: ROOT,
      env: childEnv(ROOT, { CANOPY_URL: t.url, CANOPY_KEY: key }),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
    child.stdin.end(stdin);
  });
}

it('chat-loop.ts: each line is a prompt whose reply streams back', async () => {
  const { code, stdout, stderr } = await runExample('chat-loop.ts', [], 'hello there\nand again\n\n');
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const lines = stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^session \S+ \(empty line or Ctrl-D to quit\)$/);
  expect(lines.slice(1)).toEqual(['assistant: Echo: hello there', 'assistant: Echo: and again']);
  // It really held the conversation in a session of the tenant.
  const id = /^session (\S+)/.exec(lines[0]!)![1]!;
  expect((await canopy.session(id).getTurns()).map((turn) => turn.userText[0]?.text)).toEqual([
    'hello there',
    'and again',
  ]);
});

it('streaming-turns.ts: renders the turns at every change while the reply streams', async () => {
  const { code, stdout, stderr } = await runExample('streaming-turns.ts', ['Render me word by word']);
  expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
  const out = JSON.parse(stdout) as { frames: number; reply: string; html: string };
  expect(out.reply).toBe('Echo: Render me word by word');
  // The snapshot, the prompt, then a frame per word (at least) and the commit.
  expect(out.frames).toBeGreaterThan(6);
  expect(out.html).toBe(
    '<article class="turn complete"><p class="user">Render me word by word</p><p class="assistant">Echo: Render me word by word</p></article>',
  );
});

it('token-backend.ts: mints a user token the browser then uses as that user', async () => {
  const { code, stdout, stderr } = await runExample('token-backend.ts', ['--demo']);
  expect(code).toBe(0);
  expect(stderr).toMatch(/^token backend on http:\/\/127\.0\.0\.1:\d+\/canopy-token\n$/);
  expect(JSON.parse(stdout)).toEqual({
    userId: 'alice',
    reply: 'Echo: hi, it is alice',
    sessionsSeen: 1,
    withoutSignIn: 401,
  });
});
