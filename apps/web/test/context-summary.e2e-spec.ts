// The context summary in the playground's tree, in a real browser against the real api (booted in-process, serving
// the built UI; the model is the local fake provider with a small window, which records every request): once a
// session on `summarize` has summarized its oldest turns, the last message the summary covers is marked in the tree,
// and opening the mark shows the summary's text and tokens as GET /v1/sessions/:id/context answers them; a session
// without a summary has no mark. axe-core finds nothing to fault with the mark open. Screenshots at desktop and
// phone size in test-artifacts/web.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { Canopy, type ContextView } from '@canopy/client';
import { eventually, FakeLlmServer } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors } from './support/browser';
import {
  a11yContext,
  accessibilityViolations,
  callApi,
  expectAttribute,
  expectCount,
  expectText,
  expectVisible,
  screenshots,
} from './support/journey';

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');
const MODEL = 'openai-compatible:small';

let t: TestApp;
let fake: FakeLlmServer;
let canopy: Canopy;
let browser: Browser;
let page: Page;
let errors: string[];
const ids = { summarized: '', plain: '' };
let view: ContextView;

const byTestId = (id: string) => page.getByTestId(id);
const isSummaryCall = (body: Record<string, unknown>) =>
  JSON.stringify(body.messages).includes('Summarize the conversation below');

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  fake = await FakeLlmServer.start();
  fake.respondWith((request) =>
    isSummaryCall(request.body)
      ? {
          text: ['The user asked about rivers; the assistant listed the longest ones.'],
          usage: { inputTokens: 500, outputTokens: 14 },
        }
      : { text: ['reply: ', 'ipsum '.repeat(40)], usage: { inputTokens: 10, outputTokens: 40 } },
  );
  t = await startTestApp({
    env: {
      ALLOW_PRIVATE_TARGETS: '127.0.0.1',
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'small',
      MODEL_LIMITS: `${MODEL}=2000/256`,
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
    },
  });
  const tenant = await callApi<{ apiKey: string }>(t.url, TEST_ADMIN_KEY, 'POST', '/v1/admin/tenants', {
    name: 'web-context-summary',
  });
  canopy = new Canopy({ baseUrl: t.url, credential: tenant.apiKey });
  const plain = (await canopy.sessions.create({ model: MODEL, title: 'Short chat' })).session;
  await plain.run('hello');
  ids.plain = plain.id;
  const long = (
    await canopy.sessions.create({
      model: MODEL,
      title: 'Long chat',
      opts: { context: { strategy: 'summarize' } },
    })
  ).session;
  for (let turn = 1; turn <= 10; turn++) await long.run(`turn ${turn}: ${'lorem '.repeat(120)}`);
  ids.summarized = long.id;
  view = await long.context();
  if (!view.summary) throw new Error('the long chat was not summarized');

  browser = await launchChromium();
  // The CSP bypassed for axe (injected as a script); signed in with the tenant's key.
  const context = await a11yContext((options) => browser.newContext(options), tenant.apiKey);
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  errors = pageErrors(page);
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await t?.close();
  await fake?.close();
});

describe('web UI: the context summary in the tree', () => {
  it('marks the last message the summary covers; opening it shows the summary’s text and tokens', async () => {
    const summary = view.summary!;
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(ids.summarized)}`);
    await expectText(byTestId('session-status'), 'idle');
    await expectText(byTestId('token-meter-strategy'), 'summarize');
    const mark = byTestId('summary-mark');
    await expectCount(mark, 1);
    await expectAttribute(mark, 'data-node-id', String(summary.throughNodeId));
    await expectAttribute(mark, 'aria-expanded', 'false');
    // The marked message is the node the summary covers through.
    const marked = page.locator(`[data-testid="tree-node"][data-node-id="${summary.throughNodeId}"]`);
    await eventually(async () => expect(await marked.getAttribute('class')).toMatch(/\bsummarized\b/));
    await expectCount(byTestId('summary-detail'), 0);

    await mark.click();
    await expectAttribute(mark, 'aria-expanded', 'true');
    await expectVisible(byTestId('summary-detail'));
    await expectText(byTestId('summary-text'), summary.text);
    await expectText(byTestId('summary-tokens'), `${summary.tokens.toLocaleString('en-US')} tokens`);
    await expectText(byTestId('summary-heading'), new RegExp(`^Summary through #${summary.throughNodeId} ·`));
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshots(page, '60-context-summary', async () => {
      await byTestId('toggle-tree').click();
      await expectVisible(byTestId('summary-detail'));
    });

    // Closed again.
    await mark.click();
    await expectCount(byTestId('summary-detail'), 0);
    expect(errors).toEqual([]);
  });

  it('shows no mark on a session without a summary', async () => {
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(ids.plain)}`);
    await expectText(byTestId('session-status'), 'idle');
    await expectText(byTestId('tree-summary'), '2 messages, 2 on the active path');
    await expectCount(byTestId('summary-mark'), 0);
    expect(errors).toEqual([]);
  });
});
