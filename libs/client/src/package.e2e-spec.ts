// The SDK as users install it: `npm run build:client`, `npm pack`, the tarball unpacked into a project of its
// own (its dependencies beside it, none of the monorepo), then used from CommonJS and from an ES module against
// the booted service, and its declarations type-checked by a consumer with DOM types only (a browser project).

import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../../apps/api/test/support/test-app';

const ROOT = resolve(__dirname, '../../..');
const PKG = join(ROOT, 'libs/client');

const execFileAsync = promisify(execFile);

let t: TestApp;
let project: string;

/** Synchronous: only for commands that do not talk to the test app (it serves from this process). */
function sh(command: string, args: string[], cwd: string): string {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8' });
  if (result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.status}):\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result.stdout;
}

beforeAll(async () => {
  sh(process.execPath, [join(ROOT, 'scripts/build-client.mjs')], ROOT);
  project = mkdtempSync(join(tmpdir(), 'canopy-client-'));
  const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', project], PKG)) as Array<{
    filename: string;
    files: Array<{ path: string }>;
  }>;
  const tarball = packed[0]!;
  expect(tarball.files.map((f) => f.path)).toEqual(
    expect.arrayContaining([
      'package.json',
      'dist/index.js',
      'dist/index.cjs',
      'dist/types/libs/client/src/index.d.ts',
    ]),
  );
  expect(tarball.files.some((f) => f.path.startsWith('src/'))).toBe(false);
  const target = join(project, 'node_modules/@canopy/client');
  mkdirSync(target, { recursive: true });
  sh('tar', ['-xzf', join(project, tarball.filename), '-C', target, '--strip-components=1'], project);
  for (const dep of ['zod', 'eventsource-parser']) {
    symlinkSync(join(ROOT, 'node_modules', dep), join(project, 'node_modules', dep));
  }
  t = await startTestApp();
}, 120_000);

afterAll(async () => {
  await t?.close();
  if (project) rmSync(project, { recursive: true, force: true });
});

const USE = `
  const admin = new Canopy({ baseUrl: process.env.CANOPY_URL, credential: process.env.CANOPY_ADMIN_KEY });
  const tenant = await admin.admin.createTenant(process.env.TENANT_NAME);
  const canopy = new Canopy({ baseUrl: process.env.CANOPY_URL, credential: tenant.apiKey });
  const { session } = await canopy.sessions.create({ model: 'mock:echo' });
  const result = await session.run('from the package');
  const missing = await canopy.session('nope').get().catch((e) => e);
  console.log(JSON.stringify({
    finalResponse: result.finalResponse,
    items: result.items.length,
    isTurnResult: result instanceof TurnResult,
    error: missing instanceof CanopyError ? missing.code : String(missing),
  }));
`;

it.each([
  [
    'CommonJS',
    'use.cjs',
    `const { Canopy, CanopyError, TurnResult } = require('@canopy/client');\n(async () => {${USE}})();`,
  ],
  ['an ES module', 'use.mjs', `import { Canopy, CanopyError, TurnResult } from '@canopy/client';\n${USE}`],
])('works from %s', async (_kind, file, source) => {
  writeFileSync(join(project, file), source);
  const { stdout } = await execFileAsync(process.execPath, [file], {
    cwd: project,
    // Only what the program reads: nothing of this process's environment leaks into the consumer.
    // Tenant names are unique: each consumer makes its own.
    env: { CANOPY_URL: t.url, CANOPY_ADMIN_KEY: TEST_ADMIN_KEY, TENANT_NAME: `packaged-${file}` },
    timeout: 30_000,
  });
  expect(JSON.parse(stdout)).toEqual({
    finalResponse: 'Echo: from the package',
    items: 2,
    isTurnResult: true,
    error: 'not_found',
  });
});

it('type-checks a browser consumer against its declarations (no Node types)', () => {
  writeFileSync(
    join(project, 'app.ts'),
    `import { Canopy, isCanopyError, type LiveTurnsView, type SessionEventBody, type TurnResult } from '@canopy/client';
const canopy = new Canopy({ baseUrl: location.origin, credential: () => localStorage.getItem('token') ?? '' });
export async function demo(): Promise<string> {
  const { session } = await canopy.sessions.create({ model: 'mock:echo' });
  const result: TurnResult = await session.run('hi');
  for await (const event of session.events({ after: 0 })) {
    const e: SessionEventBody = event;
    if (e.type === 'text_delta') return e.data.delta;
  }
  const live = session.turns();
  const view: LiveTurnsView = await live.ready();
  try { await session.cancel(); } catch (err) { if (isCanopyError(err, 'idle')) return 'idle'; }
  // @ts-expect-error: a command's content is text or blocks
  await session.prompt(42);
  return result.finalResponse + view.turns.length;
}
`,
  );
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        target: 'ES2022',
        module: 'ESNext',
        moduleResolution: 'bundler',
        lib: ['ES2022', 'DOM', 'DOM.Iterable'],
        types: [],
        skipLibCheck: false,
      },
      files: ['app.ts'],
    }),
  );
  sh(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], project);
});

it('ships a browser-safe ES module: no Node built-ins', () => {
  const esm = readFileSync(join(PKG, 'dist/index.js'), 'utf8');
  expect(esm).not.toMatch(/from ['"]node:|require\(/);
  expect(
    esm.match(/^import .* from ['"]([^'"]+)['"]/gm)?.map((l) => l.replace(/.*from ['"]|['"];?$/g, '')),
  ).toEqual(expect.arrayContaining(['zod', 'eventsource-parser']));
});
