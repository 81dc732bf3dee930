// examples/ai-sdk-react in Chromium: the page (@ai-sdk/react's useChat over DefaultChatTransport) built by Vite,
// served by its own server (the page, user tokens from the tenant key it keeps, /v1 forwarded to Canopy), against
// the real app: a reply streamed, regenerated and its versions browsed with the switcher, and a reload mid-stream
// that resumes the run in flight and shows the whole reply once.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { eventually } from '@canopy/testing';
import { startExampleServer } from '../../../examples/ai-sdk-react/server';
import { launchChromium, pageErrors, screenshot } from '../../web/test/support/browser';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

const ROOT = join(__dirname, '../../..');

let t: TestApp;
let api: Api;
let outDir: string;
let example: Awaited<ReturnType<typeof startExampleServer>>;
let browser: Browser;

/** vite build of the example into a directory of this run. */
async function buildExample(dir: string): Promise<void> {
  const vite = join(ROOT, 'node_modules/vite/bin/vite.js');
  const config = join(ROOT, 'examples/ai-sdk-react/vite.config.ts');
  const child = spawn(
    process.execPath,
    [vite, 'build', '--config', config, '--outDir', dir, '--logLevel', 'error'],
    {
      cwd: ROOT,
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`vite build of the example exited with ${code}`);
}

beforeAll(async () => {
  outDir = mkdtempSync(join(tmpdir(), 'canopy-ai-sdk-react-'));
  const [app] = await Promise.all([startTestApp(), buildExample(outDir)]);
  t = app;
  const tenant = await newTenant(t, 'ai sdk react example');
  api = tenant.api;
  example = await startExampleServer({ canopyUrl: t.url, canopyKey: tenant.key, root: outDir });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await example?.close();
  await t?.close();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

const replies = (page: Page) => page.locator('li[data-role="assistant"] [data-testid="text"]');

async function send(page: Page, text: string): Promise<void> {
  await page.getByLabel('Message').fill(text);
  await page.getByRole('button', { name: 'Send' }).click();
}

it('streams a reply, regenerates it and switches between its versions', async () => {
  const page = await browser.newPage();
  const errors = pageErrors(page);
  // A new chat: the page names it (in the URL's hash) and Canopy creates it with the first message.
  await page.goto(`${example.url}/?user=alice&delayMs=5`);
  await send(page, 'hello canopy');
  const id = decodeURIComponent(new URL(page.url()).hash.slice(1));
  expect(id).toMatch(/^chat-/);
  await eventually(async () =>
    expect(await replies(page).allTextContents()).toEqual(['Echo #1: hello canopy']),
  );
  await eventually(async () => expect(await page.getByTestId('status').textContent()).toBe('ready'));
  // The session is alice's (her user token), created with the page's model on the first message.
  expect((await api.get(`/v1/sessions/${id}`)).body).toMatchObject({ userId: 'alice', model: 'mock:echo' });

  await page.getByRole('button', { name: 'Regenerate' }).click();
  await eventually(async () =>
    expect(await replies(page).allTextContents()).toEqual(['Echo #2: hello canopy']),
  );
  await eventually(async () => expect(await page.getByTestId('versions').textContent()).toContain('2/2'));
  await screenshot(page, 'ai-sdk-react-versions');

  await page.getByRole('button', { name: 'Previous version' }).click();
  await eventually(async () =>
    expect(await replies(page).allTextContents()).toEqual(['Echo #1: hello canopy']),
  );
  await eventually(async () => expect(await page.getByTestId('versions').textContent()).toContain('1/2'));
  expect((await api.get(`/v1/sessions/${id}`)).body.path).toEqual([1, 2]);
  expect(errors).toEqual([]);
  await page.close();
});

it('resumes the run in flight after a reload and shows the whole reply once', async () => {
  const page = await browser.newPage();
  const errors = pageErrors(page);
  // Long enough to be in flight through the reload (~4 s).
  const prompt = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
  await page.goto(`${example.url}/?user=alice&delayMs=40`);
  await send(page, prompt);
  const id = decodeURIComponent(new URL(page.url()).hash.slice(1));
  await eventually(
    async () => expect((await replies(page).allTextContents())[0]?.length ?? 0).toBeGreaterThan(15),
    { timeoutMs: 20_000 },
  );
  await page.reload();
  // After the reload: the initial load has the prompt in flight, the resume streams the run from its start.
  await eventually(
    async () => expect(await replies(page).allTextContents()).toEqual([`Echo #1: ${prompt}`]),
    { timeoutMs: 20_000 },
  );
  expect(await page.locator('li[data-role="user"] [data-testid="text"]').allTextContents()).toEqual([prompt]);
  await eventually(async () => expect((await api.get(`/v1/sessions/${id}`)).body.status).toBe('idle'));
  await screenshot(page, 'ai-sdk-react-resumed');
  expect(errors).toEqual([]);
  await page.close();
});
