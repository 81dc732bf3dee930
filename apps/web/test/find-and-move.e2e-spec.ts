// The playground's finding, forking and moving of conversations in a real browser against the real api (booted
// in-process on a fresh database, serving the built UI): pin and unpin (pinned first, kept after a reload), search
// message text with highlighted snippets and jump to the message (on the active path, or on another branch with a
// switch), fork from a reply or from any reply in the tree (the fork opens), export in every format (downloaded
// files read back), import from a file (bad files and refusals said clearly, a Canopy export of a session still
// here imported as a copy, NDJSON with a report per line), bulk select and delete, and the loading, empty, error
// and not-found states. Every step leaves a screenshot at desktop and at phone size (360 px, no sideways scroll) in
// test-artifacts/web.

import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { Canopy, type CanopyDocument, type SessionInfo } from '@canopy/client';
import { eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors, screenshot } from './support/browser';
import {
  callApi,
  DESKTOP,
  expectAttribute,
  expectCount,
  expectNoHorizontalOverflow,
  expectText,
  expectVisible,
  PHONE,
  screenshots,
} from './support/journey';

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');

let t: TestApp;
let canopy: Canopy;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
let apiKey: string;
const ids = { giraffe: '', branchy: '', scratch1: '', scratch2: '', fork: '' };
let canopyExport: CanopyDocument;

const byTestId = (id: string, on: Page = page) => on.getByTestId(id);
const row = (title: string) => page.locator('[data-testid="session-row"]', { hasText: title });
const turn = (i: number) => page.getByTestId('turn').nth(i);
const hashOf = () => decodeURIComponent(new URL(page.url()).hash);
const info = (id: string) =>
  callApi<SessionInfo & { metadata: Record<string, unknown> }>(t.url, apiKey, 'GET', `/v1/sessions/${id}`);

async function openSession(id: string): Promise<void> {
  await page.goto(`${t.url}/#/sessions/${encodeURIComponent(id)}`);
  await expectText(byTestId('session-status'), 'idle');
}

async function search(words: string): Promise<void> {
  await byTestId('session-search').fill(words);
}

/** Clicks the export menu's Download with `format` chosen; answers the downloaded file's name and text. */
async function exportAs(format: string): Promise<{ name: string; text: string }> {
  if ((await byTestId('export-menu').count()) === 0) await byTestId('export-toggle').click();
  await byTestId('export-format').selectOption(format);
  const [download] = await Promise.all([page.waitForEvent('download'), byTestId('export-download').click()]);
  const path = await download.path();
  return { name: download.suggestedFilename(), text: readFileSync(path, 'utf8') };
}

async function importFile(name: string, text: string, format = 'auto'): Promise<void> {
  if ((await byTestId('import-panel').count()) === 0) await byTestId('import-toggle').click();
  await byTestId('import-format').selectOption(format);
  await byTestId('import-file').setInputFiles({
    name,
    mimeType: 'application/json',
    buffer: Buffer.from(text),
  });
  await byTestId('import-submit').click();
}

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  t = await startTestApp();
  const tenant = await callApi<{ apiKey: string }>(t.url, TEST_ADMIN_KEY, 'POST', '/v1/admin/tenants', {
    name: 'web-find-and-move',
  });
  apiKey = tenant.apiKey;
  canopy = new Canopy({ baseUrl: t.url, credential: apiKey });
  // Oldest first: the list shows the most recently updated first.
  const giraffe = (await canopy.sessions.create({ model: 'mock:echo', title: 'Giraffe notes' })).session;
  await giraffe.run('Where do giraffes live? In the savanna woodland');
  await giraffe.run('What do they eat? Mostly acacia leaves');
  ids.giraffe = giraffe.id;
  // A tree with two roots: the quokka prompt is off the active path once the wombat one is written.
  const branchy = (await canopy.sessions.create({ model: 'mock:echo', title: 'Branchy notes' })).session;
  await branchy.run('alpha quokka');
  await branchy.branchAndWait(null, 'beta wombat');
  ids.branchy = branchy.id;
  ids.scratch1 = (await canopy.sessions.create({ model: 'mock:echo', title: 'Scratch one' })).info.id;
  ids.scratch2 = (await canopy.sessions.create({ model: 'mock:echo', title: 'Scratch two' })).info.id;

  browser = await launchChromium();
  context = await browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
  await context.addInitScript((c: string) => {
    (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem(
      'canopy.credential',
      c,
    );
  }, apiKey);
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  errors = pageErrors(page);
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('web UI journey: finding, forking and moving conversations', () => {
  it('says when the sessions cannot be loaded, and retries', async () => {
    // The list answers an error once (as a failing proxy would); Retry asks again.
    await page.route('**/v1/sessions?*', (route) =>
      route.fulfill({
        status: 403,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'forbidden', message: 'the list is refused' } }),
      }),
    );
    await page.goto(`${t.url}/`);
    await expectText(
      byTestId('sessions-error'),
      /^The sessions could not be loaded: forbidden: the list is refused/,
    );
    await screenshots(page, '30-sessions-error');
    await page.unroute('**/v1/sessions?*');
    await byTestId('sessions-retry').click();
    await expectCount(byTestId('session-item'), 4);
    await expectCount(byTestId('sessions-error'), 0);
  });

  it('pins and unpins: pinned first, kept by the server across a reload', async () => {
    await expectAttribute(byTestId('session-item').first(), 'data-session-id', ids.scratch2);
    await row('Giraffe notes').getByTestId('pin').click();
    await expectAttribute(byTestId('session-item').first(), 'data-session-id', ids.giraffe);
    await expectAttribute(row('Giraffe notes').getByTestId('pin'), 'aria-pressed', 'true');
    await expectText(row('Giraffe notes').locator('.meta'), /^pinned · mock:echo/);
    await row('Branchy notes').getByTestId('pin').click();
    await eventually(async () => expect((await info(ids.branchy)).pinned).toBe(true));
    await screenshots(page, '31-pinned');
    // Unpinned, it goes back among the others (most recently updated first).
    await row('Branchy notes').getByTestId('pin').click();
    await expectAttribute(row('Branchy notes').getByTestId('pin'), 'aria-pressed', 'false');
    await eventually(async () => expect((await info(ids.branchy)).pinned).toBe(false));
    await page.reload();
    await expectAttribute(byTestId('session-item').first(), 'data-session-id', ids.giraffe);
    const pinned: Array<string | null> = [];
    for (const r of await byTestId('session-row').all()) pinned.push(await r.getAttribute('data-pinned'));
    expect(pinned).toEqual(['true', 'false', 'false', 'false']);
    expect((await info(ids.giraffe)).pinned).toBe(true);
  });

  it('searches message text with highlighted snippets and jumps to the message', async () => {
    await search('acacia');
    const hit = byTestId('search-hit');
    await expectCount(hit, 1);
    await expectAttribute(hit, 'data-session-id', ids.giraffe);
    // The title filter finds no title with the word; the message search does.
    await expectText(byTestId('sessions-no-match'), 'No session title contains “acacia”.');
    expect(await hit.locator('mark').allInnerTexts()).toEqual(['acacia']);
    await expectText(hit.getByTestId('search-snippet'), /Mostly acacia leaves/);
    await screenshots(page, '32-search-hits');
    const nodeId = Number(await hit.getAttribute('data-node-id'));
    expect([3, 4]).toContain(nodeId);
    await hit.click();
    await expectAttribute(turn(1), 'data-focused', nodeId === 3 ? 'prompt' : 'reply');
    expect(hashOf()).toBe(`#/sessions/${ids.giraffe}/messages/${nodeId}`);
    await expectAttribute(byTestId('focus-banner'), 'data-focus', 'on-path');
    await expectText(
      byTestId('focus-banner'),
      new RegExp(`^Showing message #${nodeId}, the search match\\.`),
    );
    expect(await turn(0).getAttribute('data-focused')).toBeNull();
    expect(
      await page.locator(`[data-testid="tree-node"][data-node-id="${nodeId}"]`).getAttribute('class'),
    ).toContain('focused');
    await screenshots(page, '33-search-jump');

    // Phrases and or: both conversations.
    await search('acacia or wombat');
    await expectCount(byTestId('search-hit'), 2);
    // Nothing matches: said so, with how search reads words.
    await search('zebracorn');
    await expectText(byTestId('search-empty'), /^No message matches “zebracorn”\./);
    // A query with no word to look for is refused by the API: the refusal is shown.
    await search('-giraffe');
    await expectText(byTestId('search-error'), /^Search failed: \w+: /);
    await screenshots(page, '34-search-error');
  });

  it('jumps to a message on another branch and offers to switch to it', async () => {
    await search('quokka');
    const hit = byTestId('search-hit');
    await expectAttribute(hit, 'data-session-id', ids.branchy);
    await expectText(hit.locator('.title'), 'Branchy notes');
    await hit.click();
    await expectAttribute(byTestId('focus-banner'), 'data-focus', 'off-path');
    await expectText(byTestId('focus-banner'), /is on another branch of this conversation\./);
    await expectText(turn(0).getByTestId('turn-prompt'), 'beta wombat');
    await screenshots(page, '35-search-other-branch');
    await byTestId('focus-switch').click();
    await expectAttribute(byTestId('focus-banner'), 'data-focus', 'on-path');
    await expectText(turn(0).getByTestId('turn-prompt'), 'alpha quokka');
    expect(await turn(0).getAttribute('data-focused')).not.toBeNull();
    // A message the session does not have.
    await page.goto(`${t.url}/#/sessions/${ids.branchy}/messages/99`);
    await expectAttribute(byTestId('focus-banner'), 'data-focus', 'missing');
    await expectText(byTestId('focus-banner'), /This session has no message #99\./);
    await byTestId('focus-clear').click();
    await expectCount(byTestId('focus-banner'), 0);
    await search('');
    await expectCount(byTestId('message-search'), 0);
  });

  it('forks from a reply: a new session with the path up to it, opened', async () => {
    await openSession(ids.giraffe);
    await expectCount(byTestId('turn'), 2);
    const before = await byTestId('session-item').count();
    // A refusal (as when the message went away meanwhile) is said, and nothing opens.
    await page.route('**/fork', (route) =>
      route.fulfill({
        status: 404,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'not_found', message: 'no node 2 in this session' } }),
      }),
    );
    try {
      await turn(0).getByTestId('fork').click();
      await expectText(byTestId('command-error'), 'not_found: no node 2 in this session');
      await expectCount(byTestId('forking'), 0);
      expect(hashOf()).toBe(`#/sessions/${ids.giraffe}`);
    } finally {
      await page.unroute('**/fork');
    }
    await turn(0).getByTestId('fork').click();
    await eventually(() => expect(hashOf()).toMatch(/^#\/sessions\/[^/]+$/));
    await eventually(() => expect(hashOf()).not.toBe(`#/sessions/${ids.giraffe}`));
    ids.fork = hashOf().slice('#/sessions/'.length);
    await expectText(byTestId('session-title'), 'Giraffe notes (fork)');
    await expectCount(byTestId('turn'), 1);
    await expectText(turn(0).getByTestId('turn-prompt'), 'Where do giraffes live? In the savanna woodland');
    await expectCount(byTestId('session-item'), before + 1);
    expect((await info(ids.fork)).metadata).toEqual({ forkedFrom: { sessionId: ids.giraffe, nodeId: 2 } });
    // The source is untouched.
    expect((await canopy.session(ids.giraffe).tree()).nodes).toHaveLength(4);
    await screenshots(page, '36-forked');

    // From the tree: a reply on a branch that is not the active path (the wombat one, after the switch above).
    await openSession(ids.branchy);
    await expectText(turn(0).getByTestId('turn-prompt'), 'alpha quokka');
    await page.locator('[data-testid="tree-fork"][data-node-id="4"]').click();
    await eventually(() => expect(hashOf()).not.toBe(`#/sessions/${ids.branchy}`));
    const branchFork = hashOf().slice('#/sessions/'.length);
    await expectText(byTestId('session-title'), 'Branchy notes (fork)');
    await expectCount(byTestId('turn'), 1);
    await expectText(turn(0).getByTestId('turn-prompt'), 'beta wombat');
    expect((await info(branchFork)).metadata).toEqual({ forkedFrom: { sessionId: ids.branchy, nodeId: 4 } });
  });

  it('exports a session in every format the API has, as downloaded files', async () => {
    await openSession(ids.giraffe);
    const markdown = await exportAs('markdown');
    expect(markdown.name).toBe('giraffe-notes.md');
    expect(markdown.text).toContain('Mostly acacia leaves');
    await expectText(byTestId('export-done'), 'Downloaded giraffe-notes.md');
    await screenshots(page, '37-export', async () => {
      await expectVisible(byTestId('export-menu'));
    });
    const whole = await exportAs('canopy');
    expect(whole.name).toBe('giraffe-notes.canopy.json');
    canopyExport = JSON.parse(whole.text) as CanopyDocument;
    expect(canopyExport).toEqual(await canopy.session(ids.giraffe).export('canopy'));
    const openai = JSON.parse((await exportAs('openai')).text) as { messages: Array<{ role: string }> };
    expect(openai.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    const anthropic = JSON.parse((await exportAs('anthropic')).text) as { messages: unknown[] };
    expect(anthropic.messages).toHaveLength(4);
    // A refusal (the session went away meanwhile, as a proxy answers here) is shown beside the button.
    await page.route('**/export?*', (route) =>
      route.fulfill({
        status: 404,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'not_found', message: 'session not found' } }),
      }),
    );
    try {
      await byTestId('export-download').click();
      await expectText(byTestId('export-error'), 'Export failed: not_found: session not found');
    } finally {
      await page.unroute('**/export?*');
    }
    await byTestId('export-format').press('Escape');
    await expectCount(byTestId('export-menu'), 0);
  });

  it('imports from a file: bad files and refusals said clearly, a copy of a session still here, NDJSON with a report', async () => {
    await importFile('notes.txt', 'this is not json');
    await expectText(byTestId('import-error'), 'The file is not JSON.');
    await importFile('weird.json', '{"hello": "world"}');
    await expectText(byTestId('import-error'), /^The file is not a conversation Canopy can read/);
    // The API refuses a bad message and names where.
    await importFile('bad.json', JSON.stringify({ messages: [{ role: 'user', content: 42 }] }));
    await expectText(byTestId('import-error'), /^Not imported: .*data\.messages\[0\]/);
    await screenshots(page, '38-import-error', async () => {
      await byTestId('toggle-sessions').first().click();
      await expectVisible(byTestId('import-error'));
    });

    // The Canopy export of a session that is still here: its id is taken, so it comes in as a copy.
    await importFile('giraffe-notes.canopy.json', JSON.stringify(canopyExport));
    await expectText(byTestId('import-error'), /^This conversation is already here/);
    await byTestId('import-copy').click();
    await expectText(byTestId('import-done'), 'Imported “Giraffe notes”.');
    await eventually(() => expect(hashOf()).not.toBe(`#/sessions/${ids.giraffe}`));
    const copyId = hashOf().slice('#/sessions/'.length);
    await expectText(byTestId('session-title'), 'Giraffe notes');
    await expectCount(byTestId('turn'), 2);
    const copy = await canopy.session(copyId).export('canopy');
    expect(copy.tree).toEqual(canopyExport.tree);

    await importFile(
      'chat.json',
      JSON.stringify([
        { role: 'user', content: 'Imported hello' },
        { role: 'assistant', content: 'Imported hi' },
      ]),
    );
    await expectText(byTestId('import-done'), /^Imported “/);
    await expectText(turn(0).getByTestId('turn-prompt'), 'Imported hello');
    // The list shows the imported session before it is counted (it is refreshed after the import).
    const chatId = hashOf().slice('#/sessions/'.length);
    await expectCount(page.locator(`[data-testid="session-item"][data-session-id="${chatId}"]`), 1);

    const count = await byTestId('session-item').count();
    const good = (text: string) =>
      JSON.stringify([
        { role: 'user', content: text },
        { role: 'assistant', content: `${text}, answered` },
      ]);
    await importFile(
      'many.ndjson',
      `${good('Bulk one')}\n${JSON.stringify([{ role: 'user', content: 7 }])}\n${good('Bulk two')}\n`,
      'openai',
    );
    await expectText(byTestId('import-report'), /^Imported 2 of 3 conversations; 1 refused:/);
    await expectCount(byTestId('import-failure'), 1);
    await expectText(byTestId('import-failure'), /^Line 2: /);
    await expectCount(byTestId('session-item'), count + 2);
    await screenshots(page, '39-import-report');
    await byTestId('import-close').click();
    await expectCount(byTestId('import-panel'), 0);
  });

  it('selects several sessions and deletes them after one confirmation', async () => {
    const count = await byTestId('session-item').count();
    await byTestId('select-mode').click();
    await expectText(byTestId('selected-count'), '0 selected');
    expect(await byTestId('delete-selected').isDisabled()).toBe(true);
    await row('Scratch one').getByTestId('session-select').check();
    // The keyboard reaches and ticks the checkboxes too.
    await row('Scratch two').getByTestId('session-select').focus();
    await page.keyboard.press('Space');
    await expectText(byTestId('selected-count'), '2 selected');
    await byTestId('delete-selected').click();
    await expectText(byTestId('bulk-confirm'), /^Delete 2 sessions and their whole trees\?/);
    await screenshots(page, '40-bulk-confirm');
    await byTestId('bulk-delete-no').click();
    await expectCount(byTestId('bulk-confirm'), 0);
    await expectCount(byTestId('session-item'), count);
    await byTestId('delete-selected').click();
    await byTestId('bulk-delete-yes').click();
    await expectText(byTestId('bulk-notice'), 'Deleted 2 sessions.');
    await expectCount(byTestId('session-item'), count - 2);
    await expectCount(row('Scratch one'), 0);
    await expectCount(byTestId('bulk-bar'), 0);
    for (const id of [ids.scratch1, ids.scratch2]) {
      const res = await fetch(`${t.url}/v1/sessions/${id}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      expect(res.status).toBe(404);
    }
    // Select all, then Done leaves everything in place.
    await byTestId('select-mode').click();
    await byTestId('select-all').click();
    await expectText(byTestId('selected-count'), `${count - 2} selected`);
    await byTestId('select-done').click();
    await expectCount(byTestId('session-item'), count - 2);
    await screenshots(page, '41-bulk-deleted');
  });

  it('fits the chat header with Export and Stop at phone size while a run is in flight', async () => {
    const { session } = await canopy.sessions.create({
      model: 'mock:echo',
      title: 'A slow reply with a long title',
      opts: { delayMs: 300 },
    });
    await page.setViewportSize(PHONE);
    try {
      await page.goto(`${t.url}/#/sessions/${session.id}`);
      await expectText(byTestId('session-status'), 'idle');
      await session.prompt('one two three four five six seven eight nine ten');
      await expectText(byTestId('session-status'), 'busy');
      await expectVisible(byTestId('cancel'));
      await expectVisible(byTestId('export-toggle'));
      await expectNoHorizontalOverflow(page);
      await screenshot(page, '42-phone-busy-header.phone');
      await byTestId('cancel').click();
      await expectText(byTestId('session-status'), 'idle');
    } finally {
      await page.setViewportSize(DESKTOP);
    }
  });

  it('had no page error on the way besides the refusals it provoked', () => {
    expect(errors.filter((e) => !/\b(400|403|404|409) \(/.test(e))).toEqual([]);
  });
});
