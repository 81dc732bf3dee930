// The web UI in a real browser against the real api (booted in-process on a fresh database, serving the built UI
// from dist/apps/web): sign in with a tenant key, hold a streamed conversation, regenerate and edit with the
// version pickers and the tree, answer a client tool and approve a server tool (its progress shown), watch the
// dashboard follow a session another tab drives (its run statistics as the API keeps them), cancel a slow run,
// sign in as an end user with a token, watch every tenant with the admin key, sign out. A screenshot of each step goes to test-artifacts/web.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { z } from 'zod';
import { ToolRegistry } from '@canopy/agent';
import { eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors, screenshot } from './support/browser';

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');
const FIRST = 'Hello there from the browser';
const SECOND = 'What is a canopy';
const EDITED = 'Tell me about trees';
const NEW_ROOT = 'A new beginning';
const LONG = Array.from({ length: 20 }, (_, i) => `word${i + 1}`).join(' ');

// The page's globals the in-page checks use (this Node test compiles without the DOM types). Functions are
// passed, not strings: the UI's Content-Security-Policy forbids eval, which string predicates need.
declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare const localStorage: { getItem(key: string): string | null };

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
let tenantId: string;
let apiKey: string;
let chatId: string;
let toolsId: string;

async function api<T = unknown>(
  method: string,
  path: string,
  body?: unknown,
  credential = apiKey,
): Promise<T> {
  const res = await fetch(`${t.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? undefined : await res.json()) as T;
}

/** Waits until the locator's text is (or matches) the expected one. */
async function expectText(locator: Locator, expected: string | RegExp, timeoutMs = 15_000): Promise<void> {
  await eventually(
    async () => {
      const text = (await locator.innerText({ timeout: 1_000 })).trim();
      if (typeof expected === 'string') expect(text).toBe(expected);
      else expect(text).toMatch(expected);
    },
    { timeoutMs, intervalMs: 50 },
  );
}

async function expectCount(locator: Locator, n: number, timeoutMs = 15_000): Promise<void> {
  await eventually(async () => expect(await locator.count()).toBe(n), { timeoutMs, intervalMs: 50 });
}

async function expectAttribute(locator: Locator, name: string, value: string): Promise<void> {
  await eventually(async () => expect(await locator.getAttribute(name, { timeout: 1_000 })).toBe(value), {
    timeoutMs: 15_000,
    intervalMs: 50,
  });
}

const byTestId = (id: string, on: Page = page) => on.getByTestId(id);
const turn = (i: number, on: Page = page) => on.getByTestId('turn').nth(i);
const reply = (i: number) => turn(i).getByTestId('reply-text');
const prompt = (i: number) => turn(i).getByTestId('turn-prompt');
const treeNode = (id: number) => page.locator(`[data-testid="tree-node"][data-node-id="${id}"]`);
const toolCall = (name: string) => page.locator(`[data-testid="tool-call"][data-tool="${name}"]`);
const liveRow = (id: string) => page.locator(`[data-testid="live-row"][data-session-id="${id}"]`);

/** The credential the page keeps. */
function storedCredential(): Promise<string | null> {
  return page.evaluate(() => localStorage.getItem('canopy.credential'));
}

async function send(text: string, on: Page = page): Promise<void> {
  await byTestId('prompt-input', on).fill(text);
  await byTestId('prompt-input', on).press('Enter');
}

async function waitIdle(on: Page = page): Promise<void> {
  await expectText(byTestId('session-status', on), 'idle');
}

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  t = await startTestApp();
  // A server tool that needs approval and reports progress while it runs.
  t.app.get(ToolRegistry).register({
    name: 'deploy',
    description: 'Deploys the app',
    input: z.object({ target: z.string() }),
    approval: true,
    handler: async (input, turn) => {
      for (const step of ['building', 'uploading', 'done']) {
        turn.reportProgress({ step });
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
      return `deployed to ${input.target}`;
    },
  });
  const tenant = await api<{ id: string; apiKey: string }>(
    'POST',
    '/v1/admin/tenants',
    { name: 'web-journey' },
    TEST_ADMIN_KEY,
  );
  tenantId = tenant.id;
  apiKey = tenant.apiKey;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  page = await context.newPage();
  errors = pageErrors(page);
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('web UI journey', () => {
  it('serves the UI at / and signs in with a tenant API key', async () => {
    const res = await fetch(`${t.url}/`);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await res.text()).toContain('<div id="root">');

    await page.goto(`${t.url}/`);
    await byTestId('credential-input').waitFor();
    await screenshot(page, '01-sign-in');

    await byTestId('credential-input').fill('ck_not_a_real_key');
    await byTestId('sign-in').click();
    await expectText(byTestId('sign-in-error'), 'This key or token is not valid.');

    await byTestId('credential-input').fill(apiKey);
    await byTestId('sign-in').click();
    await expectText(byTestId('signed-in-as'), `API key ${apiKey.slice(0, 7)}…`);
    expect(await storedCredential()).toBe(apiKey);
    await expectText(page.locator('.sidebar'), /No sessions yet\./);

    // The credential survives a reload.
    await page.reload();
    await expectText(byTestId('signed-in-as'), `API key ${apiKey.slice(0, 7)}…`);
    await screenshot(page, '02-playground-empty');
  });

  it('creates a mock:echo session', async () => {
    expect(await byTestId('new-model').inputValue()).toBe('mock:echo');
    await byTestId('new-title').fill('Journey chat');
    // Slow words, so the reply visibly streams.
    await byTestId('new-opts').fill('{"delayMs": 100}');
    await byTestId('create-session').click();

    await eventually(() => expect(new URL(page.url()).hash).toMatch(/^#\/sessions\/.+/), {
      timeoutMs: 10_000,
    });
    chatId = decodeURIComponent(new URL(page.url()).hash.slice('#/sessions/'.length));
    await expectAttribute(byTestId('chat'), 'data-session-id', chatId);
    await expectText(byTestId('session-title'), 'Journey chat');
    await waitIdle();
    await expectCount(byTestId('session-item'), 1);

    const stored = await api('GET', `/v1/sessions/${chatId}`);
    expect(stored).toMatchObject({ title: 'Journey chat', model: 'mock:echo', opts: { delayMs: 100 } });
  });

  it('holds a conversation whose replies stream in', async () => {
    await send(FIRST);
    // Mid-stream: the reply has started but is not complete, and the session is busy.
    // Checked in the page at every frame (a sample from here could miss the window).
    await page.waitForFunction(
      (full) => {
        const text = document.querySelector(
          '[data-testid="turn"].turn-streaming [data-testid="reply-text"]',
        )?.textContent;
        const status = document.querySelector('[data-testid="session-status"]')?.textContent;
        return !!text && text.startsWith('Echo:') && text !== full && status === 'busy';
      },
      `Echo: ${FIRST}`,
      { polling: 'raf', timeout: 10_000 },
    );
    await screenshot(page, '03-streaming');
    await expectText(reply(0), `Echo: ${FIRST}`);
    await waitIdle();

    await send(SECOND);
    await expectText(reply(1), `Echo: ${SECOND}`);
    await waitIdle();
    await expectCount(byTestId('turn'), 2);
    expect(await prompt(0).innerText()).toBe(FIRST);
    expect(await prompt(1).innerText()).toBe(SECOND);
    await expectText(byTestId('tree-summary'), '4 messages, 4 on the active path');
    await screenshot(page, '04-conversation');
  });

  it('regenerates a reply and switches between its versions with the picker', async () => {
    const replyOf = (i: number) => turn(i).getByTestId('turn-reply');
    await expectAttribute(replyOf(1), 'data-res-id', '4');
    await turn(1).getByTestId('regenerate').click();

    await expectText(turn(1).getByTestId('reply-picker-position'), '2/2');
    await expectAttribute(replyOf(1), 'data-res-id', '5');
    await expectText(reply(1), `Echo: ${SECOND}`);
    await waitIdle();
    await expectText(byTestId('tree-summary'), '5 messages, 4 on the active path');
    await expectAttribute(treeNode(5), 'data-on-path', 'true');
    await expectAttribute(treeNode(4), 'data-on-path', 'false');
    await screenshot(page, '05-regenerated');

    await turn(1).getByTestId('reply-picker-prev').click();
    await expectText(turn(1).getByTestId('reply-picker-position'), '1/2');
    await expectAttribute(replyOf(1), 'data-res-id', '4');
    await expectAttribute(treeNode(4), 'data-on-path', 'true');
    await expectAttribute(treeNode(5), 'data-on-path', 'false');
    expect(await turn(1).getByTestId('reply-picker-next').isEnabled()).toBe(true);
  });

  it('edits a prompt, switches prompt versions, and navigates from the tree', async () => {
    await turn(1).getByTestId('edit-prompt').click();
    expect(await byTestId('edit-input').inputValue()).toBe(SECOND);
    await byTestId('edit-input').fill(EDITED);
    await byTestId('edit-save').click();

    await expectText(prompt(1), EDITED);
    await expectText(reply(1), `Echo: ${EDITED}`);
    await expectText(turn(1).getByTestId('prompt-picker-position'), '2/2');
    await waitIdle();
    await expectText(byTestId('tree-summary'), '7 messages, 4 on the active path');
    await screenshot(page, '06-edited');

    await turn(1).getByTestId('prompt-picker-prev').click();
    await expectText(prompt(1), SECOND);
    await expectText(reply(1), `Echo: ${SECOND}`);
    await expectText(turn(1).getByTestId('prompt-picker-position'), '1/2');
    // The prompt's own reply versions are where they were left.
    await expectText(turn(1).getByTestId('reply-picker-position'), '1/2');

    await turn(1).getByTestId('prompt-picker-next').click();
    await expectText(prompt(1), EDITED);

    // A click in the tree: the regenerated reply of the original prompt.
    await treeNode(5).click();
    await expectText(prompt(1), SECOND);
    await expectText(turn(1).getByTestId('reply-picker-position'), '2/2');
    await expectAttribute(turn(1).getByTestId('turn-reply'), 'data-res-id', '5');
    await screenshot(page, '07-tree-navigation');

    // Editing the first prompt starts a new root.
    await turn(0).getByTestId('edit-prompt').click();
    await byTestId('edit-input').fill(NEW_ROOT);
    await byTestId('edit-save').click();
    await expectText(reply(0), `Echo: ${NEW_ROOT}`);
    await expectCount(byTestId('turn'), 1);
    await expectText(turn(0).getByTestId('prompt-picker-position'), '2/2');
    await waitIdle();
    await expectText(byTestId('tree-summary'), '9 messages, 2 on the active path');

    await turn(0).getByTestId('prompt-picker-prev').click();
    await expectCount(byTestId('turn'), 2);
    await expectText(prompt(0), FIRST);
    await expectText(prompt(1), SECOND);
  });

  it('answers a client tool and approves a server tool, showing its progress and result', async () => {
    await byTestId('new-model').fill('mock:script');
    await byTestId('new-title').fill('Tool journey');
    await byTestId('new-opts').fill(
      JSON.stringify({
        serverTools: ['deploy'],
        script: [
          { text: 'Let me look that up.', toolCalls: [{ name: 'lookup', input: { q: 'weather' } }] },
          { toolCalls: [{ name: 'deploy', input: { target: 'staging' } }] },
          { text: 'All done.' },
        ],
      }),
    );
    await byTestId('new-tools').fill(
      JSON.stringify([
        {
          name: 'lookup',
          description: 'Looks something up on the client',
          inputSchema: { type: 'object', properties: { q: { type: 'string' } } },
          approval: true,
        },
      ]),
    );
    await byTestId('create-session').click();
    await expectText(byTestId('session-title'), 'Tool journey');
    toolsId = (await byTestId('chat').getAttribute('data-session-id'))!;
    expect(toolsId).not.toBe(chatId);
    await waitIdle();

    await send('Check the weather, then deploy');
    // The client tool pauses the run: it needs an answer (there is nothing on the server to approve).
    await expectText(byTestId('session-status'), 'paused');
    await expectText(toolCall('lookup').getByTestId('tool-state'), 'awaiting decision');
    await expectText(reply(0).first(), 'Let me look that up.');
    expect(await toolCall('lookup').getByTestId('tool-approve').count()).toBe(0);
    await screenshot(page, '08-client-tool-awaiting');
    await toolCall('lookup').getByTestId('tool-decision-text').fill('Sunny, 21 °C');
    await toolCall('lookup').getByTestId('tool-answer').click();
    await expectText(toolCall('lookup').getByTestId('tool-result'), 'Sunny, 21 °C');

    // Then the server tool, which waits for approval.
    await expectText(toolCall('deploy').getByTestId('tool-state'), 'awaiting decision');
    await expectText(byTestId('session-status'), 'paused');
    await screenshot(page, '09-server-tool-awaiting');
    await toolCall('deploy').getByTestId('tool-approve').click();

    await expectText(toolCall('deploy').getByTestId('tool-result'), 'deployed to staging');
    await expectText(
      toolCall('deploy').getByTestId('tool-progress'),
      ['{"step":"building"}', '{"step":"uploading"}', '{"step":"done"}'].join('\n'),
    );
    await expectText(reply(0).last(), 'All done.');
    await waitIdle();
    await expectText(byTestId('tree-summary'), '6 messages, 6 on the active path');
    await screenshot(page, '10-tools-done');

    const run = await api<{ data: Array<{ content: Array<{ type: string }> }> }>(
      'GET',
      `/v1/sessions/${toolsId}/turns`,
    );
    expect(run.data).toHaveLength(1);
    expect(run.data[0]!.content.filter((b) => b.type === 'tool_use')).toHaveLength(2);
  });

  const runStats = () =>
    api<{
      perMinute: Array<{ started: number; finished: number }>;
      usageByTenant: Array<{ tenantId: string; runs: number; outputTokens: number }>;
    }>('GET', '/v1/stats?minutes=60');
  const tenantUsage = async () => {
    const u = (await runStats()).usageByTenant.find((x) => x.tenantId === tenantId)!;
    return { runs: u.runs, outputTokens: u.outputTokens };
  };

  it('shows the live sessions on the dashboard, following a run another tab drives', async () => {
    await byTestId('nav-dashboard').click();
    await byTestId('dashboard').waitFor();
    await expectCount(liveRow(chatId), 1);
    await expectCount(liveRow(toolsId), 1);
    await expectText(liveRow(toolsId).getByTestId('live-status'), 'idle');
    await expectText(byTestId('live-count'), '2');

    // Another tab (same browser, so already signed in) opens the chat and prompts.
    const other = await context.newPage();
    await other.goto(`${t.url}/#/sessions/${encodeURIComponent(chatId)}`);
    await expectCount(byTestId('turn', other), 2);
    await waitIdle(other);
    const usageBefore = await tenantUsage();
    await send(LONG, other);

    await expectText(liveRow(chatId).getByTestId('live-status'), 'busy');
    await expectText(liveRow(chatId).getByTestId('live-controllers'), '1');
    await screenshot(page, '11-dashboard-busy');
    await expectText(liveRow(chatId).getByTestId('live-status'), 'idle');
    await expectText(turn(2, other).getByTestId('reply-text'), `Echo: ${LONG}`);

    // The feed, and the run statistics as the API keeps them (GET /v1/stats over the last hour).
    const runEvents = (type: string) =>
      page.locator(`[data-testid="activity-item"][data-type="${type}"]`).filter({ hasText: chatId });
    await expectCount(runEvents('run_started'), 1);
    await expectCount(runEvents('run_finished'), 1);
    const stats = await runStats();
    const mine = await tenantUsage();
    // The other tab's run is one more (mock:echo counts words: "Echo:" and the 20 of the prompt).
    expect(mine).toEqual({
      ...usageBefore,
      runs: usageBefore.runs + 1,
      outputTokens: usageBefore.outputTokens + 21,
    });
    await eventually(
      async () => {
        const started = await byTestId('minute-started').allInnerTexts();
        const finished = await byTestId('minute-finished').allInnerTexts();
        expect(started.reduce((n, s) => n + Number(s), 0)).toBe(
          stats.perMinute.reduce((n, m) => n + m.started, 0),
        );
        expect(finished.reduce((n, s) => n + Number(s), 0)).toBe(
          stats.perMinute.reduce((n, m) => n + m.finished, 0),
        );
      },
      { timeoutMs: 15_000 },
    );
    const usage = page.locator(`[data-testid="usage-row"][data-tenant-id="${tenantId}"]`);
    await expectText(usage.getByTestId('usage-runs'), String(mine.runs));
    await expectText(usage.getByTestId('usage-output'), String(mine.outputTokens));
    await screenshot(page, '12-dashboard-after-run');
    await other.close();

    // A click on a live session opens it.
    await liveRow(toolsId).click();
    await expectText(byTestId('session-title'), 'Tool journey');
    await expectText(reply(0).last(), 'All done.');
    await expectText(toolCall('deploy').getByTestId('tool-result'), 'deployed to staging');
    await screenshot(page, '13-opened-from-dashboard');
  });

  it('cancels a slow run from the chat: the reply stops and nothing is committed', async () => {
    const slow = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:echo',
      title: 'Slow chat',
      opts: { delayMs: 150 },
    });
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(slow.id)}`);
    await expectText(byTestId('session-title'), 'Slow chat');
    await send(LONG);
    await expectText(byTestId('session-status'), 'busy');
    await expectText(reply(0), /^Echo: word1/);
    await byTestId('cancel').click();
    await waitIdle();
    await expectCount(byTestId('turn'), 0);
    await screenshot(page, '14-cancelled');
    const messages = await api<{ data: unknown[] }>('GET', `/v1/sessions/${slow.id}/messages`);
    expect(messages.data).toEqual([]);
  });

  it("signs in as an end user with a token and sees only that user's sessions", async () => {
    const mine = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:echo',
      title: 'Alice chat',
      userId: 'alice',
    });
    const { token } = await api<{ token: string }>('POST', '/v1/tokens', { userId: 'alice' });
    await byTestId('sign-out').click();
    await byTestId('credential-input').fill(token);
    await byTestId('sign-in').click();
    await expectText(byTestId('signed-in-as'), 'user alice');
    expect(await byTestId('nav-dashboard').count()).toBe(0); // tenant-wide views are for keys
    await expectCount(byTestId('session-item'), 1);
    await expectAttribute(byTestId('session-item'), 'data-session-id', mine.id);
    await byTestId('session-item').click();
    await send('hi from alice');
    await expectText(reply(0), 'Echo: hi from alice');
    await screenshot(page, '15-end-user');
    // The tenant's other sessions stay out of reach for this token.
    const res = await fetch(`${t.url}/v1/sessions/${encodeURIComponent(chatId)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(404);
  });

  it('lets the admin key watch every tenant on the dashboard (no playground: it has no tenant)', async () => {
    await byTestId('sign-out').click();
    await byTestId('credential-input').fill(TEST_ADMIN_KEY);
    await byTestId('sign-in').click();
    await expectText(byTestId('signed-in-as'), 'admin key');
    await byTestId('dashboard').waitFor();
    expect(await byTestId('nav-playground').count()).toBe(0);
    await expectCount(liveRow(chatId), 1);
    await expectText(liveRow(chatId).getByTestId('live-tenant'), tenantId.slice(0, 8));
    await screenshot(page, '16-admin-dashboard');
  });

  it('signs out', async () => {
    await byTestId('sign-out').click();
    await byTestId('credential-input').waitFor();
    expect(await storedCredential()).toBeNull();
    await screenshot(page, '17-signed-out');
    // Nothing broke in the page: no uncaught error, no blocked resource (CSP) — only the refused bad key.
    expect(errors.filter((e) => !e.includes('401 (Unauthorized)'))).toEqual([]);
  });
});
