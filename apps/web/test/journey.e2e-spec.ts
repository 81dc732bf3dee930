// The playground in a real browser against the real api (booted in-process on a fresh database, serving the built
// UI from dist/apps/web): sign in; pick a model from GET /v1/models with its pre-filled options and a system
// prompt; a streamed conversation (Enter sends, Shift+Enter adds a line; the tree never says "0 messages" while a
// prompt is on screen); Markdown replies with highlighted, copyable code and no raw HTML, copy buttons, time and
// tokens on hover; regenerate an earlier reply (with the hint about later turns), edit with the keyboard, the tree
// with siblings side by side; the built-in demo tools (server tools, a client tool to answer, an approval with
// progress); a cancelled and a failed run kept on screen with Retry / Edit; rename, search and delete sessions, a
// new chat by shortcut; an unknown session; the phone layout's panels; an end user's token. Every step leaves a
// screenshot at desktop and at phone size (360 px) in test-artifacts/web. dashboard.e2e-spec.ts follows on.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors, screenshot } from './support/browser';
import {
  callApi,
  DESKTOP,
  expectAttribute,
  expectCount,
  expectText,
  expectVisible,
  PHONE,
  screenshots,
} from './support/journey';

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');
const FIRST = 'Hello there from the browser';
const SECOND = 'What is a canopy?\nAnswer in one line.';
const MARKDOWN =
  'Show me code:\n\n```js\nconst answer = 42; // the answer\n```\n\n<img src=x onerror=alert(1)> <b>raw</b> and **bold** [a link](javascript:alert(1))';
const EDITED = 'Tell me about trees';
const NEW_ROOT = 'A new beginning';
const LONG = Array.from({ length: 20 }, (_, i) => `word${i + 1}`).join(' ');

declare const document: { querySelector(selector: string): { textContent: string | null } | null };
declare const localStorage: { getItem(key: string): string | null };
declare const navigator: { clipboard: { readText(): Promise<string> } };

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
let apiKey: string;
let chatId: string;

const api = <T = unknown>(method: string, path: string, body?: unknown, credential = apiKey) =>
  callApi<T>(t.url, credential, method, path, body);
const byTestId = (id: string, on: Page = page) => on.getByTestId(id);
const turn = (i: number, on: Page = page) => on.getByTestId('turn').nth(i);
const reply = (i: number) => turn(i).getByTestId('reply-text');
const prompt = (i: number) => turn(i).getByTestId('turn-prompt');
const treeNode = (id: number) => page.locator(`[data-testid="tree-node"][data-node-id="${id}"]`);
const toolCall = (name: string) => page.locator(`[data-testid="tool-call"][data-tool="${name}"]`);
const storedCredential = () => page.evaluate(() => localStorage.getItem('canopy.credential'));
const clipboard = () => page.evaluate(() => navigator.clipboard.readText());

async function send(text: string, on: Page = page): Promise<void> {
  await byTestId('prompt-input', on).fill(text);
  await byTestId('prompt-input', on).press('Enter');
}

async function waitIdle(on: Page = page): Promise<void> {
  await expectText(byTestId('session-status', on), 'idle');
}

async function box(id: number) {
  const b = await treeNode(id).boundingBox();
  if (!b) throw new Error(`tree node ${id} is not on screen`);
  return b;
}

/** At phone size the side panels are closed behind their toggles. */
async function panelsClosed(): Promise<void> {
  await expectVisible(byTestId('sidebar'), false);
  await expectVisible(byTestId('tree'), false);
  await expectVisible(page.getByTestId('toggle-sessions').first());
}

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  t = await startTestApp();
  const tenant = await api<{ apiKey: string }>(
    'POST',
    '/v1/admin/tenants',
    { name: 'web-journey' },
    TEST_ADMIN_KEY,
  );
  apiKey = tenant.apiKey;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: DESKTOP });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  errors = pageErrors(page);
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('web UI journey: the playground', () => {
  it('signs in with a tenant API key and says what to do when there is no session', async () => {
    await page.goto(`${t.url}/`);
    await byTestId('credential-input').waitFor();
    await screenshots(page, '01-sign-in');
    await byTestId('credential-input').fill('ck_not_a_real_key');
    await byTestId('sign-in').click();
    await expectText(byTestId('sign-in-error'), 'This key or token is not valid.');
    await byTestId('credential-input').fill(apiKey);
    await byTestId('sign-in').click();
    await expectText(byTestId('signed-in-as'), `API key ${apiKey.slice(0, 7)}…`);
    expect(await storedCredential()).toBe(apiKey);
    await expectText(byTestId('sessions-empty'), /^No sessions yet\. Pick a model above and press Create/);
    await expectVisible(byTestId('no-session'));
    await screenshots(page, '02-playground-empty', panelsClosed);
  });

  it('offers the server’s models, pre-fills real options for each, and creates a session with a system prompt', async () => {
    const { data: models } = await api<{ data: Array<{ id: string; tools: boolean }> }>('GET', '/v1/models');
    await eventually(async () =>
      expect(
        await byTestId('new-model')
          .locator('option')
          .evaluateAll((os) => os.map((o) => (o as unknown as { value: string }).value)),
      ).toEqual(models.map((m) => m.id)),
    );
    expect(await byTestId('new-model').locator('option[value="mock:script"]').innerText()).toBe(
      'mock:script · tools',
    );
    expect(await byTestId('new-model').inputValue()).toBe('mock:echo');
    await expectText(byTestId('model-description'), /^Built in: answers "Echo/);
    // Pre-filled with working values, not placeholders.
    expect(JSON.parse(await byTestId('new-opts').inputValue())).toEqual({ delayMs: 30, numbered: true });
    expect(JSON.parse(await byTestId('new-tools').inputValue())).toEqual([]);
    await byTestId('new-model').selectOption('mock:script');
    const scripted = JSON.parse(await byTestId('new-opts').inputValue()) as {
      serverTools: string[];
      script: unknown[];
    };
    expect(scripted.serverTools).toEqual(['clock', 'calculator', 'deploy']);
    expect(scripted.script.length).toBe(4);
    expect(JSON.parse(await byTestId('new-tools').inputValue())).toEqual([
      expect.objectContaining({ name: 'ask_city' }),
    ]);
    await byTestId('new-model').selectOption('mock:echo');
    await byTestId('new-title').fill('Journey chat');
    await byTestId('new-system').fill('You are terse.');
    // Slow words, so the reply visibly streams.
    await byTestId('new-opts').fill('{"delayMs": 100}');
    await screenshots(page, '03-new-session-form', async () => {
      await byTestId('toggle-sessions').first().click();
      await expectVisible(byTestId('new-session-form'));
    });
    await byTestId('create-session').click();
    await eventually(() => expect(new URL(page.url()).hash).toMatch(/^#\/sessions\/.+/), {
      timeoutMs: 10_000,
    });
    chatId = decodeURIComponent(new URL(page.url()).hash.slice('#/sessions/'.length));
    await expectAttribute(byTestId('chat'), 'data-session-id', chatId);
    await expectText(byTestId('session-title'), 'Journey chat');
    await waitIdle();
    // No run yet: the token meter says it counts after one.
    await expectAttribute(byTestId('token-meter'), 'data-state', 'none');
    expect(await api('GET', `/v1/sessions/${chatId}`)).toMatchObject({
      title: 'Journey chat',
      model: 'mock:echo',
      system: 'You are terse.',
      opts: { delayMs: 100 },
    });
  });

  it('streams replies; Enter sends, Shift+Enter adds a line; the tree counts the prompt in flight', async () => {
    await send(FIRST);
    // Mid-stream, checked at every frame: the reply is partial, the session busy, and the tree never says 0.
    await page.waitForFunction(
      (full) => {
        const text = document.querySelector(
          '[data-testid="turn"].turn-streaming [data-testid="reply-text"]',
        )?.textContent;
        const status = document.querySelector('[data-testid="session-status"]')?.textContent;
        const summary = document.querySelector('[data-testid="tree-summary"]')?.textContent ?? '';
        if (summary.startsWith('0 messages'))
          throw new Error(`the tree says "${summary}" with a prompt on screen`);
        return (
          !!text &&
          text.startsWith('Echo:') &&
          text !== full &&
          status === 'busy' &&
          /in flight/.test(summary)
        );
      },
      `Echo: ${FIRST}`,
      { polling: 'raf', timeout: 10_000 },
    );
    await screenshots(page, '04-streaming');
    await expectText(reply(0), `Echo: ${FIRST}`);
    await waitIdle();
    await expectText(byTestId('tree-summary'), '2 messages, 2 on the active path');
    // The token meter, live from the run's `context` event: what the next run would send, as the API counts it.
    const { context } = await api<{ context: { tokens: number } }>('GET', `/v1/sessions/${chatId}`);
    await expectText(byTestId('token-meter-label'), `~${context.tokens} tokens · no window known`);
    await expectAttribute(byTestId('token-meter'), 'data-state', 'unknown');
    await expectText(byTestId('token-meter-strategy'), 'none');

    const [line1, line2] = SECOND.split('\n');
    await byTestId('prompt-input').fill(line1!);
    await byTestId('prompt-input').press('Shift+Enter');
    await byTestId('prompt-input').pressSequentially(line2!);
    expect(await byTestId('prompt-input').inputValue()).toBe(SECOND);
    await expectCount(byTestId('turn'), 1); // nothing sent yet
    await byTestId('prompt-input').press('Enter');
    await expectText(prompt(1), SECOND);
    await expectText(reply(1), `Echo: ${SECOND.replace('\n', ' ')}`);
    await waitIdle();
    expect(await byTestId('prompt-input').inputValue()).toBe('');
  });

  it('renders Markdown safely, highlights and copies code, copies messages, shows time and tokens on hover', async () => {
    await send(MARKDOWN);
    const block = turn(2).getByTestId('code-block');
    await expectAttribute(block, 'data-language', 'js');
    await waitIdle();
    expect(await block.locator('.hljs-keyword').first().innerText()).toBe('const');
    expect(await block.locator('.hljs-comment').innerText()).toBe('// the answer');
    const replyBox = turn(2).getByTestId('turn-reply');
    // Raw HTML stays text: no element made of it, nothing executed.
    expect(await replyBox.locator('img, b').count()).toBe(0);
    await expectText(
      replyBox.getByTestId('reply-text'),
      /<img src=x onerror=alert\(1\)> <b>raw<\/b> and bold a link/,
    );
    expect(await replyBox.locator('strong').innerText()).toBe('bold');
    expect(await replyBox.locator('a').getAttribute('href')).not.toMatch(/javascript/);

    await block.getByTestId('copy-code').click();
    await expectText(block.getByTestId('copy-code'), 'Copied');
    expect(await clipboard()).toBe('const answer = 42; // the answer');
    await turn(0).getByTestId('copy-reply').click();
    expect(await clipboard()).toBe(`Echo: ${FIRST}`);
    await turn(1).getByTestId('copy-prompt').click();
    expect(await clipboard()).toBe(SECOND);

    // Time and tokens show on hover (and keyboard focus) only.
    const meta = turn(0).getByTestId('reply-meta');
    await expectVisible(meta, false);
    await turn(0).getByTestId('turn-reply').hover();
    await expectVisible(meta);
    await expectText(meta, /^\w{3} \d{1,2}, \d{4}.* · \d+ in · 6 out tokens$/);
    await turn(0).getByTestId('turn-prompt').hover();
    await expectVisible(turn(0).getByTestId('prompt-meta'));
    await screenshots(page, '05-markdown-and-hover');
  });

  it('regenerates an earlier reply after saying the later turns leave, with siblings side by side in the tree', async () => {
    await expectAttribute(turn(1).getByTestId('turn-reply'), 'data-res-id', '4');
    await turn(1).getByTestId('regenerate').click();
    await expectText(
      turn(1).getByTestId('regenerate-hint'),
      /the later turn stays in the tree but leaves this conversation/,
    );
    await screenshots(page, '06-regenerate-hint');
    await turn(1).getByTestId('regenerate-confirm').click();
    await expectText(turn(1).getByTestId('reply-picker-position'), '2/2');
    await expectAttribute(turn(1).getByTestId('turn-reply'), 'data-res-id', '7');
    await waitIdle();
    await expectCount(byTestId('turn'), 2);
    await expectText(byTestId('tree-summary'), '7 messages, 4 on the active path');
    // Siblings (the two replies to node 3) side by side; a child below its parent, never beside it.
    const [n1, n2, n3, n4, n7, n5] = [
      await box(1),
      await box(2),
      await box(3),
      await box(4),
      await box(7),
      await box(5),
    ];
    expect(Math.abs(n4.y - n7.y)).toBeLessThan(2);
    expect(n7.x).toBeGreaterThan(n4.x + n4.width / 2);
    expect(n2.y).toBeGreaterThan(n1.y + n1.height / 2);
    expect(n4.y).toBeGreaterThan(n3.y + n3.height / 2);
    expect(n4.x).toBeGreaterThan(n3.x);
    expect(n5.y).toBeGreaterThan(n4.y + n4.height / 2);
    expect(Math.abs(n5.x - n4.x)).toBeLessThan(n4.width / 2);
    await expectAttribute(treeNode(7), 'data-on-path', 'true');
    await expectAttribute(treeNode(4), 'data-on-path', 'false');
    await screenshots(page, '07-regenerated-tree');

    await turn(1).getByTestId('reply-picker-prev').click();
    await expectText(turn(1).getByTestId('reply-picker-position'), '1/2');
    await expectCount(byTestId('turn'), 3); // the later turn is back with its reply
    await expectAttribute(treeNode(4), 'data-on-path', 'true');
  });

  it('edits with the keyboard (Escape cancels, Enter saves), switches versions, navigates from the tree', async () => {
    await turn(1).getByTestId('edit-prompt').click();
    expect(await byTestId('edit-input').inputValue()).toBe(SECOND);
    await expectText(byTestId('edit-hint'), /the later turn stays in the tree/);
    await byTestId('edit-input').press('Escape');
    await expectCount(byTestId('edit-input'), 0);
    await expectText(byTestId('session-status'), 'idle');
    await turn(1).getByTestId('edit-prompt').click();
    await byTestId('edit-input').fill('Tell me');
    await byTestId('edit-input').press('Shift+Enter');
    await byTestId('edit-input').pressSequentially('about trees');
    expect(await byTestId('edit-input').inputValue()).toBe('Tell me\nabout trees');
    await byTestId('edit-input').fill(EDITED);
    await byTestId('edit-input').press('Enter');
    await expectText(prompt(1), EDITED);
    await expectText(reply(1), `Echo: ${EDITED}`);
    await expectText(turn(1).getByTestId('prompt-picker-position'), '2/2');
    await waitIdle();
    await expectText(byTestId('tree-summary'), '9 messages, 4 on the active path');
    await screenshots(page, '08-edited');

    await turn(1).getByTestId('prompt-picker-prev').click();
    await expectText(prompt(1), SECOND);
    await treeNode(7).click();
    await expectText(turn(1).getByTestId('reply-picker-position'), '2/2');
    await expectAttribute(turn(1).getByTestId('turn-reply'), 'data-res-id', '7');

    // Editing the first prompt starts a new root.
    await turn(0).getByTestId('edit-prompt').click();
    await byTestId('edit-input').fill(NEW_ROOT);
    await byTestId('edit-save').click();
    await expectText(reply(0), `Echo: ${NEW_ROOT}`);
    await expectCount(byTestId('turn'), 1);
    await waitIdle();
    await expectText(byTestId('tree-summary'), '11 messages, 2 on the active path');
    await turn(0).getByTestId('prompt-picker-prev').click();
    await expectCount(byTestId('turn'), 2);
    await expectText(prompt(0), FIRST);
  });

  it('runs the built-in demo tools from the pre-filled mock:script example: results, an answer, an approval with progress', async () => {
    await byTestId('new-model').selectOption('mock:script');
    // The options were edited for the first session: back to the model's example.
    await byTestId('reset-examples').click();
    expect(JSON.parse(await byTestId('new-opts').inputValue())).toMatchObject({
      serverTools: ['clock', 'calculator', 'deploy'],
    });
    await byTestId('new-title').fill('Tool journey');
    await byTestId('create-session').click();
    await expectText(byTestId('session-title'), 'Tool journey');
    await waitIdle();
    await send('Run the demo');
    await expectText(toolCall('ask_city').getByTestId('tool-state'), 'awaiting decision');
    await expectText(byTestId('session-status'), 'paused');
    await expectText(toolCall('calculator').getByTestId('tool-result'), /"value":35/);
    await expectText(toolCall('clock').getByTestId('tool-result'), /"timeZone":"UTC"/);
    expect(await toolCall('ask_city').getByTestId('tool-approve').count()).toBe(0); // a client tool: answer it
    await screenshots(page, '09-client-tool-awaiting');
    await toolCall('ask_city').getByTestId('tool-decision-text').fill('Paris');
    await toolCall('ask_city').getByTestId('tool-answer').click();
    await expectText(toolCall('ask_city').getByTestId('tool-result'), 'Paris');
    await expectText(toolCall('deploy').getByTestId('tool-state'), 'awaiting decision');
    await screenshots(page, '10-approval-awaiting');
    await toolCall('deploy').getByTestId('tool-approve').click();
    await expectText(toolCall('deploy').getByTestId('tool-result'), 'deployed to staging');
    await expectText(
      toolCall('deploy').getByTestId('tool-progress'),
      ['building (25%)', 'testing (50%)', 'uploading (75%)', 'done (100%)'].join('\n'),
    );
    await expectText(reply(0).last(), /^All done\. Here is the code:/);
    await waitIdle();
    await screenshots(page, '11-tools-done');
  });

  it('keeps a cancelled run (Escape stops it) and a failed one on screen, with Retry and Edit', async () => {
    const slow = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:echo',
      title: 'Slow chat',
      opts: { delayMs: 150, contextWindow: 4_000 },
    });
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(slow.id)}`);
    await expectText(byTestId('session-title'), 'Slow chat');
    await send(LONG);
    await expectText(reply(0), /^Echo: word1 word2/);
    await page.keyboard.press('Escape');
    await waitIdle();
    await expectText(byTestId('interrupted-label'), 'Cancelled: this reply was stopped and not saved');
    // A cancelled run is metered too: nothing was kept, against the session's window.
    await expectText(byTestId('token-meter-label'), '0 / 4,000 tokens');
    await expectAttribute(byTestId('token-meter'), 'data-state', 'normal');
    const kept = byTestId('interrupted');
    await expectText(kept.getByTestId('turn-prompt'), LONG);
    await expectText(kept.getByTestId('reply-text'), /^Echo: word1 word2/);
    expect((await api<{ data: unknown[] }>('GET', `/v1/sessions/${slow.id}/messages`)).data).toEqual([]);
    await screenshots(page, '12-cancelled');
    await byTestId('retry').click();
    await expectText(prompt(0), LONG);
    await expectCount(byTestId('interrupted'), 0);
    await byTestId('cancel').click(); // the Stop button works too
    await waitIdle();
    await expectCount(byTestId('interrupted'), 1);

    const failing = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:script',
      title: 'Failing chat',
      opts: { script: [{ error: 'model exploded' }] },
    });
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(failing.id)}`);
    await expectText(byTestId('session-title'), 'Failing chat');
    await send('this will fail');
    await expectText(byTestId('interrupted-label'), /^Failed: .*model exploded/);
    await expectText(byTestId('interrupted').getByTestId('turn-prompt'), 'this will fail');
    await byTestId('edit-interrupted').click();
    expect(await byTestId('prompt-input').inputValue()).toBe('this will fail');
    await screenshots(page, '13-failed');

    // Over the window: the run fails with context_length_exceeded and the meter turns to its error style.
    const tight = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:echo',
      title: 'Tight chat',
      opts: { contextWindow: 32 },
    });
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(tight.id)}`);
    await expectText(byTestId('session-title'), 'Tight chat');
    await send(`${LONG} ${LONG}`);
    await expectText(byTestId('interrupted-label'), /^Failed: .*window/);
    await expectAttribute(byTestId('token-meter'), 'data-state', 'over');
    await expectText(byTestId('token-meter-label'), '0 / 32 tokens');
  });

  it('renames, searches and deletes sessions, and starts a new chat with Ctrl+Shift+O', async () => {
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(chatId)}`);
    const item = (title: string) => page.locator('[data-testid="session-item"]', { hasText: title });
    await expectCount(item('Journey chat'), 1);
    const row = page.locator('.session-list li', { has: item('Journey chat') });
    await row.getByTestId('rename').click();
    await byTestId('rename-input').fill('Throwaway');
    await byTestId('rename-input').press('Escape');
    await expectCount(item('Journey chat'), 1);
    await row.getByTestId('rename').click();
    await byTestId('rename-input').fill('Renamed chat');
    await byTestId('rename-input').press('Enter');
    await expectCount(item('Renamed chat'), 1);
    await expectText(byTestId('session-title'), 'Renamed chat');
    expect(await api('GET', `/v1/sessions/${chatId}`)).toMatchObject({ title: 'Renamed chat' });

    await byTestId('session-search').fill('renamed');
    await expectCount(byTestId('session-item'), 1);
    await byTestId('session-search').fill('zzz');
    await expectText(byTestId('sessions-no-match'), 'No session title contains “zzz”.');
    await byTestId('session-search').fill('');

    const slowRow = page.locator('.session-list li', { has: item('Slow chat') });
    const slowId = (await item('Slow chat').getAttribute('data-session-id'))!;
    await slowRow.getByTestId('delete').click();
    await expectText(byTestId('delete-confirm'), /Delete “Slow chat” and its whole tree\?/);
    await screenshots(page, '14-delete-confirm');
    await byTestId('delete-no').click();
    await expectCount(item('Slow chat'), 1);
    await slowRow.getByTestId('delete').click();
    await byTestId('delete-yes').click();
    await expectCount(byTestId('delete-confirm'), 0);
    await expectCount(item('Slow chat'), 0);
    await eventually(async () =>
      expect(
        (await fetch(`${t.url}/v1/sessions/${slowId}`, { headers: { authorization: `Bearer ${apiKey}` } }))
          .status,
      ).toBe(404),
    );

    const before = await byTestId('session-item').count();
    await byTestId('prompt-input').focus();
    await page.keyboard.press('Control+Shift+O');
    await expectCount(byTestId('session-item'), before + 1);
    await eventually(() => expect(new URL(page.url()).hash).not.toContain(encodeURIComponent(chatId)));
    await waitIdle();
    await expectText(byTestId('no-turns'), 'No messages yet: write below and press Enter.');
  });

  it('shows an unknown session as not found, stops there, and disables the composer', async () => {
    const requests: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/v1/sessions/no-such-session')) requests.push(r.url());
    });
    await page.goto(`${t.url}/#/sessions/no-such-session`);
    await expectText(byTestId('session-status'), 'not found');
    await expectText(byTestId('not-found'), /There is no session no-such-session here/);
    expect(await byTestId('prompt-input').isDisabled()).toBe(true);
    expect(await byTestId('send').isDisabled()).toBe(true);
    await expectText(byTestId('tree'), /No tree: the session does not exist\./);
    const seen = requests.length;
    // Nothing keeps retrying: a second later no new request went out.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(requests.length).toBe(seen);
    await screenshots(page, '15-not-found');
  });

  it('at phone size, opens the sessions and the tree behind toggles, and chats', async () => {
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(chatId)}`);
    await page.setViewportSize(PHONE);
    try {
      await expectText(byTestId('session-title'), 'Renamed chat');
      await panelsClosed();
      await byTestId('toggle-sessions').first().click();
      await expectVisible(byTestId('sidebar'));
      await screenshot(page, '16-phone-sessions-panel.phone');
      await page.locator('[data-testid="session-item"]', { hasText: 'Tool journey' }).click();
      await expectText(byTestId('session-title'), 'Tool journey');
      await expectVisible(byTestId('sidebar'), false);
      await byTestId('toggle-tree').click();
      await expectVisible(byTestId('tree'));
      await screenshot(page, '17-phone-tree-panel.phone');
      await page.getByRole('button', { name: 'Close', exact: true }).last().click();
      await expectVisible(byTestId('tree'), false);
      await page.goto(`${t.url}/#/sessions/${encodeURIComponent(chatId)}`);
      await waitIdle();
      await send('from a phone');
      await expectText(reply(2), 'Echo: from a phone');
      await waitIdle();
      await screenshot(page, '18-phone-chat.phone');
    } finally {
      await page.setViewportSize(DESKTOP);
    }
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
    expect(await byTestId('nav-dashboard').count()).toBe(0);
    await expectCount(byTestId('session-item'), 1);
    await expectAttribute(byTestId('session-item'), 'data-session-id', mine.id);
    await byTestId('session-item').click();
    await waitIdle();
    await send('hi from alice');
    await expectText(reply(0), 'Echo: hi from alice');
    await screenshots(page, '19-end-user');
    const res = await fetch(`${t.url}/v1/sessions/${encodeURIComponent(chatId)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(404);
  });

  it('signs out, with no page error on the way (no uncaught error, no resource the CSP blocked)', async () => {
    await byTestId('sign-out').click();
    await byTestId('credential-input').waitFor();
    expect(await storedCredential()).toBeNull();
    // Only the refused bad key and the unknown session's 404s were expected.
    expect(errors.filter((e) => !/401 \(Unauthorized\)|404 \(Not Found\)/.test(e))).toEqual([]);
  });
});
