// The tenant's MCP servers in the playground, in a real browser against the real api (booted in-process, serving the
// built UI): the new-session form offers the tenant's enabled servers (GET /v1/mcp-servers through the SDK; a
// disabled one is not offered), the ones picked are saved in opts.mcpServers, and the chat shows the model's call of
// a server's tool like any tool call, with the real MCP server's (the official SDK's, on loopback) answer. The model
// is the local fake provider scripting the call. A user token, which may not list the servers, gets no picker.
// axe-core finds nothing to fault with the picker shown.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Canopy } from '@canopy/client';
import { eventually, FakeLlmServer, McpTestServer } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors } from './support/browser';
import {
  a11yContext,
  accessibilityViolations,
  callApi,
  expectCount,
  expectText,
  expectVisible,
  screenshots,
} from './support/journey';

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');
const MODEL = 'openai-compatible:small';

let t: TestApp;
let fake: FakeLlmServer;
let mcp: McpTestServer;
let canopy: Canopy;
let apiKey: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];

const byTestId = (id: string) => page.getByTestId(id);

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  fake = await FakeLlmServer.start();
  mcp = await McpTestServer.start();
  t = await startTestApp({
    env: {
      ALLOW_PRIVATE_TARGETS: '127.0.0.1',
      OPENAI_COMPATIBLE_BASE_URL: fake.baseUrl,
      OPENAI_COMPATIBLE_MODELS: 'small',
      RATE_LIMIT_PER_KEY: '0',
      RATE_LIMIT_PER_TENANT: '0',
    },
  });
  ({ apiKey } = await callApi<{ apiKey: string }>(t.url, TEST_ADMIN_KEY, 'POST', '/v1/admin/tenants', {
    name: 'web-mcp-servers',
  }));
  canopy = new Canopy({ baseUrl: t.url, credential: apiKey });
  for (const [name, enabled] of [
    ['docs', true],
    ['search', true],
    ['archive', false],
  ] as const) {
    await callApi(t.url, apiKey, 'POST', '/v1/mcp-servers', { name, url: mcp.url, enabled });
  }

  browser = await launchChromium();
  context = await a11yContext((options) => browser.newContext(options), apiKey);
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  errors = pageErrors(page);
}, 120_000);

afterAll(async () => {
  await context?.close();
  await browser?.close();
  await t?.close();
  await mcp?.close();
  await fake?.close();
});

describe('web UI: MCP servers in the playground', () => {
  it('the SDK lists the tenant’s servers, enabled or not', async () => {
    const servers = await canopy.mcpServers.list();
    expect(servers.map((s) => [s.name, s.enabled]).sort()).toEqual([
      ['archive', false],
      ['docs', true],
      ['search', true],
    ]);
  });

  it('offers the enabled servers, saves the ones picked in opts.mcpServers, and shows their tool calls', async () => {
    await page.goto(`${t.url}/#/`);
    await expectVisible(byTestId('new-mcp-servers'));
    await expectCount(byTestId('mcp-server-docs'), 1);
    await expectCount(byTestId('mcp-server-search'), 1);
    await expectCount(byTestId('mcp-server-archive'), 0);
    await byTestId('new-model').selectOption(MODEL);
    await byTestId('new-title').fill('With docs');
    await byTestId('mcp-server-docs').check();
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshots(page, '80-mcp-servers-picker');
    await byTestId('create-session').click();
    await eventually(
      async () => {
        const shown = page.getByTestId('new-session-error');
        expect((await shown.count()) ? await shown.innerText() : null).toBeNull();
        expect(new URL(page.url()).hash).toMatch(/^#\/sessions\/.+/);
      },
      { timeoutMs: 10_000 },
    );
    const id = decodeURIComponent(new URL(page.url()).hash.slice('#/sessions/'.length));
    const info = await canopy.session(id).get();
    expect(info.opts).toMatchObject({ mcpServers: ['docs'] });

    fake.enqueue(
      { toolCalls: [{ name: 'docs__echo', input: { text: 'from the browser' } }] },
      { text: ['The server echoed it.'] },
    );
    await byTestId('prompt-input').fill('echo something');
    await byTestId('prompt-input').press('Enter');
    const call = page.locator('[data-testid="tool-call"][data-tool="docs__echo"]');
    await expectCount(call, 1);
    await expectText(call.getByTestId('tool-state'), 'done');
    await expectText(call.getByTestId('tool-result'), /echo: from the browser/);
    await expectText(byTestId('session-status'), 'idle');
    expect(mcp.calls.map((c) => [c.tool, c.args])).toEqual([['echo', { text: 'from the browser' }]]);
    await screenshots(page, '81-mcp-tool-call');
    expect(errors).toEqual([]);
  });

  it('leaves opts.mcpServers out when none is picked (the session takes the tenant’s default)', async () => {
    await callApi(t.url, apiKey, 'PUT', '/v1/settings', { mcpServers: ['search'] });
    // A fresh page: nothing picked.
    await page.goto(`${t.url}/#/`);
    await page.reload();
    await expectVisible(byTestId('new-mcp-servers'));
    expect(await byTestId('mcp-server-docs').isChecked()).toBe(false);
    await byTestId('new-title').fill('Default servers');
    await byTestId('create-session').click();
    await eventually(
      async () => {
        const shown = page.getByTestId('new-session-error');
        expect((await shown.count()) ? await shown.innerText() : null).toBeNull();
        expect(new URL(page.url()).hash).toMatch(/^#\/sessions\/.+/);
      },
      { timeoutMs: 10_000 },
    );
    const id = decodeURIComponent(new URL(page.url()).hash.slice('#/sessions/'.length));
    expect((await canopy.session(id).get()).opts).toMatchObject({ mcpServers: ['search'] });
    expect(errors).toEqual([]);
  });

  it('shows no picker to a user token (only a tenant key may list the servers)', async () => {
    const { token } = await canopy.tokens.create('alice');
    const userContext = await a11yContext((options) => browser.newContext(options), token);
    try {
      const userPage = await userContext.newPage();
      const userErrors = pageErrors(userPage);
      await userPage.goto(`${t.url}/#/`);
      await expectVisible(userPage.getByTestId('new-session-form'));
      await expectVisible(userPage.getByTestId('create-session'));
      await eventually(async () => expect(await userPage.getByTestId('new-model').isEnabled()).toBe(true));
      await expectCount(userPage.getByTestId('new-mcp-servers'), 0);
      expect(userErrors).toEqual([]);
    } finally {
      await userContext.close();
    }
  });
});
