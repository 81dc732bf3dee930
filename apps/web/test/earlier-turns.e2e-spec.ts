// A long conversation in the playground's chat, in a real browser against the real api (booted in-process, serving
// the built UI): a 1,000-message session (imported) opens at its latest turns, the recent part its live snapshot
// holds (LIVE_PATH_NODES), and scrolling to the top of the chat loads the earlier turns a page at a time, keeping the
// reader's place, back to the first turn ("The start of the conversation"). A page that fails (the network answers
// 503) says so with Retry, and Retry loads it. axe-core finds nothing to fault. Screenshots at desktop and phone size
// in test-artifacts/web.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page, Route } from 'playwright-core';
import { eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors } from './support/browser';
import {
  a11yContext,
  accessibilityViolations,
  callApi,
  expectAttribute,
  expectText,
  screenshots,
} from './support/journey';

// The page's globals the in-page functions use (these tests compile without the DOM types).
declare const document: {
  querySelector(selector: string): {
    scrollTop: number;
    getBoundingClientRect(): { top: number; bottom: number };
  } | null;
};

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');
const MESSAGES = 1_000;
/**
 * The turns a live snapshot holds of it: the path's last 200 nodes (LIVE_PATH_NODES, set so here: more than a
 * screen, so the chat opens on them without filling itself first), 2 per turn.
 */
const RECENT_TURNS = 100;
const PAGE = 50;

let t: TestApp;
let browser: Browser;
let page: Page;
let errors: string[];
let sessionId = '';

const byTestId = (id: string) => page.getByTestId(id);
const turnIds = async (): Promise<number[]> =>
  (
    await page
      .getByTestId('turn')
      .evaluateAll<string[], unknown>((els) =>
        els.map((el) => (el as unknown as { dataset: { turnId: string } }).dataset.turnId),
      )
  ).map(Number);

/** Where a turn is against the chat's visible part (px from the list's top; negative: above it). */
function turnOffset(id: number): Promise<{ top: number; bottom: number; listBottom: number } | null> {
  return page.evaluate((turnId) => {
    const list = document.querySelector('[data-testid="turns"]');
    const turn = document.querySelector(`[data-testid="turn"][data-turn-id="${turnId}"]`);
    if (!list || !turn) return null;
    const l = list.getBoundingClientRect();
    const r = turn.getBoundingClientRect();
    return { top: r.top - l.top, bottom: r.bottom - l.top, listBottom: l.bottom - l.top };
  }, id);
}

/** Scrolls the chat to its top, as a reader does. */
const scrollToTop = () =>
  page.evaluate(() => {
    document.querySelector('[data-testid="turns"]')!.scrollTop = 0;
  });

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  t = await startTestApp({
    env: { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_TENANT: '0', LIVE_PATH_NODES: '200' },
  });
  const tenant = await callApi<{ apiKey: string }>(t.url, TEST_ADMIN_KEY, 'POST', '/v1/admin/tenants', {
    name: 'web-earlier-turns',
  });
  const data = Array.from({ length: MESSAGES }, (_, i) => ({
    role: i % 2 === 0 ? 'user' : 'assistant',
    content: `message ${i + 1}: ${'lorem ipsum '.repeat(20 + (i % 7) * 10)}`,
  }));
  const imported = await callApi<{ id: string }>(t.url, tenant.apiKey, 'POST', '/v1/sessions/import', {
    format: 'openai',
    data,
    model: 'mock:echo',
  });
  sessionId = imported.id;
  await callApi(t.url, tenant.apiKey, 'PATCH', `/v1/sessions/${sessionId}`, { title: 'A long conversation' });

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
});

describe('web UI: a long conversation’s earlier turns', () => {
  it('opens at the recent turns; scrolling to the top loads earlier pages back to the first turn', async () => {
    await page.goto(`${t.url}/#/sessions/${encodeURIComponent(sessionId)}`);
    await expectText(byTestId('session-status'), 'idle');
    await expectText(byTestId('session-title'), 'A long conversation');
    const first = MESSAGES - 2 * RECENT_TURNS + 1;
    await eventually(async () =>
      expect(await turnIds()).toEqual(Array.from({ length: RECENT_TURNS }, (_, i) => first + 2 * i)),
    );
    await expectAttribute(byTestId('earlier'), 'data-state', 'more');
    // At the latest turn: the last one is in view, the first one shown far above it.
    await eventually(async () => {
      const last = (await turnOffset(MESSAGES - 1))!;
      expect(last.bottom).toBeLessThanOrEqual(last.listBottom + 1);
      expect(last.bottom).toBeGreaterThan(0);
      expect((await turnOffset(first))!.bottom).toBeLessThan(0);
    });
    await expectText(page.getByTestId('turn').last().getByTestId('turn-prompt'), /^message 999:/);

    // A page that fails says so and offers Retry; Retry loads it.
    const failing = (url: URL) => url.pathname.endsWith('/turns') && url.searchParams.has('before');
    const refuse = (route: Route) =>
      route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'unavailable', message: 'the database is unavailable' } }),
      });
    await page.route(failing, refuse);
    await scrollToTop();
    await expectAttribute(byTestId('earlier'), 'data-state', 'error');
    await expectText(
      byTestId('earlier-error'),
      'Could not load earlier messages: unavailable: the database is unavailable',
    );
    expect(await turnIds()).toHaveLength(RECENT_TURNS);
    expect(await accessibilityViolations(page)).toEqual([]);
    await screenshots(page, '70-earlier-turns-error');
    await page.unroute(failing, refuse);
    await byTestId('earlier-retry').click();
    await eventually(async () => expect(await turnIds()).toHaveLength(RECENT_TURNS + PAGE));
    expect((await turnIds())[0]).toBe(first - 2 * PAGE);
    await expectAttribute(byTestId('earlier'), 'data-state', 'more');

    // Scrolled to the top, page after page: the turn that was first stays where it was as each lands above it.
    let shown = RECENT_TURNS + PAGE;
    while (shown < MESSAGES / 2) {
      const top = (await turnIds())[0]!;
      await scrollToTop();
      const expected = Math.min(MESSAGES / 2, shown + PAGE);
      await eventually(async () => expect(await turnIds()).toHaveLength(expected));
      shown = expected;
      // The reader's place: the turn they were at (the first one, at the top) is still in view, not pushed down
      // out of sight by the page that landed above it.
      const after = (await turnOffset(top))!;
      expect(after.top).toBeGreaterThanOrEqual(0);
      expect(after.top).toBeLessThan(after.listBottom);
    }
    expect(await turnIds()).toEqual(Array.from({ length: MESSAGES / 2 }, (_, i) => 1 + 2 * i));
    await expectAttribute(byTestId('earlier'), 'data-state', 'start');
    await expectText(byTestId('earlier'), 'The start of the conversation');
    await expectText(page.getByTestId('turn').first().getByTestId('turn-prompt'), /^message 1:/);
    await screenshots(page, '71-earlier-turns-start');
    expect(errors.filter((e) => !e.includes('503'))).toEqual([]);
  }, 120_000);
});
