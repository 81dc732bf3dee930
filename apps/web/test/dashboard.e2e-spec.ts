// The dashboard in a real browser against the real api, and the accessibility of the whole UI. The dashboard opens
// after runs already happened: its activity feed starts from them (in words, with the sessions' titles), its
// charts show runs, tokens, latency and live sessions, live sessions come busy and paused first and filter, a row
// opens the session read-only as an observer while another tab drives it, and the admin key sees tenants by name.
// Then axe-core checks every page (WCAG 2 A/AA, contrast included; the playground also with its search hits, a
// message jumped to, the import form with a refusal, a selection and the export menu open; the admin's tenants with
// one opened) in light and dark mode at desktop and phone sizes, and visible focus is checked on the keyboard path.
// Screenshots at both sizes go to test-artifacts/web.

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { eventually } from '@canopy/testing';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors, screenshot } from './support/browser';
import {
  a11yContext,
  accessibilityViolations,
  callApi,
  DESKTOP,
  expectCount,
  expectText,
  expectVisible,
  PHONE,
  screenshots,
} from './support/journey';

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
let apiKey: string;
let tenantId: string;
const ids: Record<'finished' | 'busy' | 'paused' | 'idle' | 'markdown', string> = {
  finished: '',
  busy: '',
  paused: '',
  idle: '',
  markdown: '',
};

const api = <T = unknown>(method: string, path: string, body?: unknown, credential = apiKey) =>
  callApi<T>(t.url, credential, method, path, body);
const byTestId = (id: string, on: Page = page) => on.getByTestId(id);
const liveRow = (id: string) => page.locator(`[data-testid="live-row"][data-session-id="${id}"]`);

interface Stats {
  perMinute: Array<{ started: number; finished: number; outputTokens: number }>;
  recentRuns: Array<{ sessionId: string }>;
}

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await api<{ id: string; apiKey: string }>(
    'POST',
    '/v1/admin/tenants',
    { name: 'Dashboard Tenant' },
    TEST_ADMIN_KEY,
  );
  tenantId = tenant.id;
  apiKey = tenant.apiKey;
  // The recent past, before any dashboard is open: a finished run and a failed one.
  const finished = await api<{ id: string }>('POST', '/v1/sessions', {
    model: 'mock:echo',
    title: 'Earlier chat',
  });
  ids.finished = finished.id;
  await api('POST', `/v1/sessions/${finished.id}/prompt`, { content: 'done a minute ago', wait: true });
  const failing = await api<{ id: string }>('POST', '/v1/sessions', {
    model: 'mock:script',
    title: 'Broken chat',
    opts: { script: [{ error: 'model exploded' }] },
  });
  await api('POST', `/v1/sessions/${failing.id}/prompt`, { content: 'fail', wait: true });
  browser = await launchChromium();
  context = await browser.newContext({ viewport: DESKTOP });
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

describe('web UI journey: the dashboard', () => {
  it('starts its activity feed from the runs that already happened, in words, with session titles', async () => {
    await page.goto(`${t.url}/#/dashboard`);
    await byTestId('dashboard').waitFor();
    const items = page.locator(`[data-testid="activity-item"][data-session-id="${ids.finished}"]`);
    await expectCount(items, 2);
    await expectText(items.first().getByTestId('activity-session'), 'Earlier chat');
    await expectText(items.first().getByTestId('activity-text'), /^run completed, \d+ tokens$/);
    await expectText(items.last().getByTestId('activity-text'), 'run started for a prompt');
    await expectText(
      page.locator('[data-testid="activity-item"][data-type="run_finished"]', { hasText: 'Broken chat' }),
      /Broken chat run failed \(.*model exploded.*\), 0 tokens/,
    );
    // Words, not raw JSON.
    for (const text of await byTestId('activity-text').allInnerTexts()) expect(text).not.toMatch(/[{}"]/);
    expect(await byTestId('activity-empty').count()).toBe(0);
  });

  it('charts runs, tokens, latency and live sessions with the figures the API keeps', async () => {
    for (const chart of ['runs', 'tokens', 'latency', 'live']) {
      await expectVisible(byTestId(`chart-${chart}`).locator('svg.recharts-surface').first());
    }
    await eventually(async () =>
      expect(
        await byTestId('chart-runs').locator('.recharts-bar-rectangle path, .recharts-rectangle').count(),
      ).toBeGreaterThan(0),
    );
    const stats = await api<Stats>('GET', '/v1/stats?minutes=60');
    const sum = async (id: string) =>
      (
        await byTestId(id).evaluateAll((cells) =>
          cells.map((c) => Number((c as unknown as { textContent: string }).textContent)),
        )
      ).reduce((n, x) => n + x, 0);
    await eventually(async () => {
      expect(await sum('minute-started')).toBe(stats.perMinute.reduce((n, m) => n + m.started, 0));
      expect(await sum('minute-finished')).toBe(stats.perMinute.reduce((n, m) => n + m.finished, 0));
      expect(await sum('minute-output-tokens')).toBe(stats.perMinute.reduce((n, m) => n + m.outputTokens, 0));
    });
    expect(await byTestId('minute-p50').count()).toBeGreaterThan(0);
    await screenshots(page, '20-dashboard');
  });

  it('lists live sessions busy and paused first, filters them, and opens one read-only as an observer', async () => {
    const busy = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:echo',
      title: 'Busy chat',
      opts: { delayMs: 400 },
    });
    const paused = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:script',
      title: 'Paused chat',
      tools: [{ name: 'ask', description: 'asks', inputSchema: { type: 'object' } }],
      opts: { script: [{ toolCalls: [{ name: 'ask', input: {} }] }, { text: 'thanks' }] },
    });
    Object.assign(ids, { busy: busy.id, paused: paused.id });
    await api('POST', `/v1/sessions/${paused.id}/prompt`, { content: 'ask me' });
    await api('POST', `/v1/sessions/${busy.id}/prompt`, {
      content: Array.from({ length: 60 }, (_, i) => `w${i}`).join(' '),
    });
    await expectText(liveRow(busy.id).getByTestId('live-status'), 'busy');
    await expectText(liveRow(paused.id).getByTestId('live-status'), 'paused');
    const order = async () =>
      await byTestId('live-row').evaluateAll<string[], unknown>((rows) =>
        rows.map((r) => (r as unknown as { dataset: { status: string } }).dataset.status),
      );
    await eventually(async () => {
      const statuses = await order();
      expect(statuses.slice(0, 2)).toEqual(['busy', 'paused']);
      expect(statuses.slice(2).every((s) => s === 'idle')).toBe(true);
    });
    await byTestId('live-filter-paused').click();
    await expectCount(byTestId('live-row'), 1);
    await expectText(byTestId('live-filter-paused'), 'paused (1)');
    await byTestId('live-filter-all').click();
    await byTestId('live-search').fill('busy');
    await expectCount(byTestId('live-row'), 1);
    await screenshots(page, '21-dashboard-live-filtered');
    await byTestId('live-search').fill('');

    // A row opens the session as an observer: it watches the run stream, and cannot act.
    await liveRow(busy.id).click();
    await eventually(() => expect(new URL(page.url()).hash).toBe(`#/sessions/${busy.id}/watch`));
    await expectVisible(byTestId('observer-banner'));
    expect(await byTestId('prompt-input').count()).toBe(0);
    expect(await byTestId('cancel').count()).toBe(0);
    await expectText(byTestId('turn').first().getByTestId('reply-text'), /^Echo: w0 w1/);
    await eventually(async () =>
      expect(
        (await api<{ observers: number }>('GET', `/v1/live/${busy.id}`)).observers,
      ).toBeGreaterThanOrEqual(1),
    );
    await screenshots(page, '22-observer');
    await api('POST', `/v1/sessions/${busy.id}/cancel`);
    await api('POST', `/v1/sessions/${paused.id}/resume`, { decision: { type: 'result', content: 'ok' } });
  });

  it('follows another tab’s run in the feed, by title', async () => {
    await page.goto(`${t.url}/#/dashboard`);
    await byTestId('dashboard').waitFor();
    const other = await context.newPage();
    await other.goto(`${t.url}/#/sessions/${encodeURIComponent(ids.finished)}`);
    await expectText(byTestId('session-status', other), 'idle');
    await byTestId('prompt-input', other).fill('again from the other tab');
    await byTestId('prompt-input', other).press('Enter');
    await expectText(
      byTestId('turn', other).nth(1).getByTestId('reply-text'),
      'Echo: again from the other tab',
    );
    await expectCount(
      page.locator(
        `[data-testid="activity-item"][data-session-id="${ids.finished}"][data-type="run_finished"]`,
      ),
      2,
    );
    await expectText(
      page.locator('[data-testid="activity-item"]').first().getByTestId('activity-session'),
      'Earlier chat',
    );
    await other.close();
  });

  it('shows the admin every tenant by name', async () => {
    const adminPage = await browser.newPage({ viewport: DESKTOP });
    try {
      await adminPage.goto(`${t.url}/`);
      await byTestId('credential-input', adminPage).fill(TEST_ADMIN_KEY);
      await byTestId('sign-in', adminPage).click();
      await expectText(byTestId('signed-in-as', adminPage), 'admin key');
      await byTestId('dashboard', adminPage).waitFor();
      expect(await byTestId('nav-playground', adminPage).count()).toBe(0);
      const row = adminPage.locator(`[data-testid="live-row"][data-session-id="${ids.finished}"]`);
      await expectText(row.getByTestId('live-tenant'), 'Dashboard Tenant');
      await expectText(
        adminPage.locator(`[data-testid="activity-item"][data-session-id="${ids.finished}"]`).first(),
        /Dashboard Tenant · Earlier chat run completed/,
      );
      await expectText(
        adminPage
          .locator(`[data-testid="usage-row"][data-tenant-id="${tenantId}"]`)
          .getByTestId('usage-tenant'),
        'Dashboard Tenant',
      );
      expect(await adminPage.locator('body').innerText()).not.toContain(tenantId.slice(0, 8));
      await screenshots(adminPage, '23-admin-dashboard');
    } finally {
      await adminPage.close();
    }
  });
});

describe('accessibility', () => {
  it('passes axe-core (WCAG 2 A/AA, contrast) on every page, light and dark, desktop and phone', async () => {
    // A session with what a chat shows: Markdown with code, a tool call with its result.
    const chat = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:script',
      title: 'Accessible chat',
      opts: {
        serverTools: ['calculator'],
        script: [
          { text: 'Computing.', toolCalls: [{ name: 'calculator', input: { expression: '6 * 7' } }] },
          { text: 'It is **42**:\n\n```ts\nconst answer = 42;\n```' },
        ],
      },
    });
    ids.markdown = chat.id;
    await api('POST', `/v1/sessions/${chat.id}/prompt`, { content: 'What is 6 * 7?', wait: true });
    // Pinned, so the list's pinned state is checked too.
    await api('PATCH', `/v1/sessions/${chat.id}`, { pinned: true });

    const failures: string[] = [];
    const signedOut = await browser.newContext({ viewport: DESKTOP, bypassCSP: true });
    const signedIn = await a11yContext((o) => browser.newContext(o), apiKey);
    const signedInAdmin = await a11yContext((o) => browser.newContext(o), TEST_ADMIN_KEY);
    try {
      // The playground's finding and moving views, all open at once: a search with its hits, the session opened
      // at a hit's message, the import form with a refusal, several sessions selected, the export menu.
      const findAndMove = async (p: Page) => {
        await byTestId('select-mode', p).click();
        await byTestId('session-select', p).first().check();
        await byTestId('session-search', p).fill('computing');
        await byTestId('search-hit', p).first().waitFor();
        await byTestId('focus-banner', p).waitFor();
        await byTestId('import-toggle', p).click();
        await byTestId('import-file', p).setInputFiles({
          name: 'bad.json',
          mimeType: 'application/json',
          buffer: Buffer.from('{"not": "a conversation"}'),
        });
        await byTestId('import-submit', p).click();
        await byTestId('import-error', p).waitFor();
        await byTestId('export-toggle', p).click();
        await byTestId('export-menu', p).waitFor();
      };
      const pages: Array<[string, BrowserContext, string, string, ((p: Page) => Promise<void>)?]> = [
        ['sign-in', signedOut, '/', 'credential-input'],
        ['playground', signedIn, `/#/sessions/${chat.id}`, 'code-block'],
        ['find-and-move', signedIn, `/#/sessions/${chat.id}/messages/2`, 'code-block', findAndMove],
        ['dashboard', signedIn, '/#/dashboard', 'chart-runs'],
        // The admin's tenants, one opened (its state, quotas and keys).
        ['tenants', signedInAdmin, `/#/tenants/${tenantId}`, 'key-row'],
      ];
      for (const scheme of ['light', 'dark'] as const) {
        for (const [name, ctx, path, ready, prepare] of pages) {
          const p = await ctx.newPage();
          await p.emulateMedia({ colorScheme: scheme });
          await p.goto(`${t.url}${path}`);
          await byTestId(ready, p).first().waitFor();
          await prepare?.(p);
          for (const [size, viewport] of [
            ['desktop', DESKTOP],
            ['phone', PHONE],
          ] as const) {
            await p.setViewportSize(viewport);
            for (const v of await accessibilityViolations(p))
              failures.push(`${name}, ${scheme}, ${size}: ${v}`);
          }
          if (scheme === 'dark') await screenshot(p, `24-dark-${name}`);
          await p.close();
        }
      }
    } finally {
      await signedOut.close();
      await signedIn.close();
      await signedInAdmin.close();
    }
    expect(failures).toEqual([]);
    // Five pages, two schemes, two sizes: past the default deadline on a busy 2-core machine.
  }, 240_000);

  it('shows where the keyboard focus is', async () => {
    await page.goto(`${t.url}/#/sessions/${ids.markdown}`);
    await byTestId('code-block').waitFor();
    await byTestId('prompt-input').focus();
    await page.keyboard.press('Tab'); // to the Send button, then Shift+Tab back
    await page.keyboard.press('Shift+Tab');
    const outline = await byTestId('prompt-input').evaluate((el) => {
      const style = (
        globalThis as unknown as {
          getComputedStyle(e: unknown): { outlineStyle: string; outlineWidth: string };
        }
      ).getComputedStyle(el);
      return `${style.outlineStyle} ${style.outlineWidth}`;
    });
    expect(outline).toBe('solid 2px');
    await screenshot(page, '25-focus-visible');
    expect(errors.filter((e) => !/404 \(Not Found\)/.test(e))).toEqual([]);
  });
});
