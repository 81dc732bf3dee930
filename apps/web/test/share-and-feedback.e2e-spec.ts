// Sharing and rating in a real browser against the real api: an end user rates replies with the thumbs (and a
// comment) under them, the rating kept across a reload; shares the conversation; the link, opened by someone not
// signed in, shows it read-only as it was (a message added later never shows); "Continue this conversation" signs
// a user of the same tenant in and opens a session of their own holding it, and tells another tenant's key it
// cannot; revoked, the link says it is not found. Also: the playground's session list shows a session's status
// as it changes (the activity feed), busy then idle, beside the chat header saying the same. Screenshots at desktop
// and phone sizes go to test-artifacts/web; axe-core checks the shared page.

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors } from './support/browser';
import {
  accessibilityViolations,
  callApi,
  DESKTOP,
  expectAttribute,
  expectCount,
  expectText,
  expectVisible,
  screenshots,
} from './support/journey';

let t: TestApp;
let browser: Browser;
let apiKey: string;
let otherKey: string;
let aliceToken: string;
let bobToken: string;
let sessionId: string;
let shareUrl: string;
const contexts: BrowserContext[] = [];
const errors: string[][] = [];

const api = <T = unknown>(method: string, path: string, body?: unknown, credential = apiKey) =>
  callApi<T>(t.url, credential, method, path, body);

/**
 * A new page, signed in with `credential` (or not signed in at all). `expectErrors`: the page is expected to log a
 * refused request (a 404), so its errors are not collected. `axe`: the Content-Security-Policy is bypassed, so the
 * accessibility checker can be injected.
 */
async function pageAs(
  credential: string | null,
  options: { expectErrors?: boolean; axe?: boolean } = {},
): Promise<Page> {
  const context = await browser.newContext({
    viewport: DESKTOP,
    ...(options.axe ? { bypassCSP: true } : {}),
  });
  contexts.push(context);
  if (credential) {
    await context.addInitScript((c: string) => {
      (
        globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }
      ).localStorage.setItem('canopy.credential', c);
    }, credential);
  }
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const logged = pageErrors(page);
  if (!options.expectErrors) errors.push(logged);
  return page;
}

interface Feedback {
  nodeId: number;
  userId: string | null;
  rating: string;
  comment: string | null;
}

beforeAll(async () => {
  t = await startTestApp();
  const tenant = await api<{ apiKey: string }>(
    'POST',
    '/v1/admin/tenants',
    { name: 'Sharing Tenant' },
    TEST_ADMIN_KEY,
  );
  apiKey = tenant.apiKey;
  otherKey = (
    await api<{ apiKey: string }>('POST', '/v1/admin/tenants', { name: 'Elsewhere' }, TEST_ADMIN_KEY)
  ).apiKey;
  aliceToken = (await api<{ token: string }>('POST', '/v1/tokens', { userId: 'alice' })).token;
  bobToken = (await api<{ token: string }>('POST', '/v1/tokens', { userId: 'bob' })).token;
  sessionId = (
    await api<{ id: string }>('POST', '/v1/sessions', { model: 'mock:echo', title: 'Trip ideas' }, aliceToken)
  ).id;
  for (const content of ['Where to go in spring?', 'And in autumn?'])
    await api('POST', `/v1/sessions/${sessionId}/prompt`, { content, wait: true }, aliceToken);
  browser = await launchChromium();
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close();
  await t?.close();
});

describe('web UI journey: sharing and rating', () => {
  let alice: Page;

  it('rates replies with the thumbs and a comment, kept across a reload', async () => {
    alice = await pageAs(aliceToken);
    await alice.goto(`${t.url}/#/sessions/${sessionId}`);
    const turns = alice.getByTestId('turn');
    await expectCount(turns, 2);
    const first = turns.nth(0).getByTestId('feedback');
    const second = turns.nth(1).getByTestId('feedback');
    await first.getByTestId('feedback-up').click();
    await expectAttribute(first, 'data-rating', 'up');
    await first.getByTestId('feedback-comment').fill('Lovely ideas');
    await first.getByTestId('feedback-save').click();
    await expectText(first.getByTestId('feedback-comment-text'), '“Lovely ideas”');
    await second.getByTestId('feedback-down').click();
    await expectAttribute(second, 'data-rating', 'down');
    await screenshots(alice, 'feedback-01-rated');
    // Taken back by the pressed thumb.
    await second.getByTestId('feedback-cancel').click();
    await second.getByTestId('feedback-down').click();
    await expectAttribute(second, 'data-rating', '');
    const { data } = await api<{ data: Feedback[] }>('GET', `/v1/feedback?sessionId=${sessionId}`);
    expect(data).toEqual([
      expect.objectContaining({ nodeId: 2, userId: 'alice', rating: 'up', comment: 'Lovely ideas' }),
    ]);

    await alice.reload();
    await expectCount(alice.getByTestId('turn'), 2);
    await expectAttribute(
      alice.getByTestId('turn').nth(0).getByTestId('feedback-up'),
      'aria-pressed',
      'true',
    );
    await expectAttribute(
      alice.getByTestId('turn').nth(1).getByTestId('feedback-down'),
      'aria-pressed',
      'false',
    );
  });

  it('shares the conversation: the link shows it read-only, as it was, to someone not signed in', async () => {
    await alice.getByTestId('share').click();
    await alice.getByTestId('share-create').click();
    await expectVisible(alice.getByTestId('share-url'));
    shareUrl = await alice.getByTestId('share-url').inputValue();
    expect(shareUrl).toMatch(new RegExp(`^${t.url}/#/shared/shr_[A-Za-z0-9_-]{43}$`));
    await screenshots(alice, 'share-01-link');
    // A message after sharing never shows through the link.
    await api(
      'POST',
      `/v1/sessions/${sessionId}/prompt`,
      { content: 'Secret plans for winter', wait: true },
      aliceToken,
    );

    const anyone = await pageAs(null);
    await anyone.goto(shareUrl);
    await expectText(anyone.getByTestId('shared-title'), 'Trip ideas');
    await expectCount(anyone.getByTestId('turn'), 2);
    expect(await anyone.getByTestId('shared').innerText()).not.toContain('Secret plans');
    // Read-only: no composer, no edit, no regenerate, no thumbs.
    for (const id of ['prompt-input', 'edit-prompt', 'regenerate', 'feedback'])
      expect(await anyone.getByTestId(id).count()).toBe(0);
    await screenshots(anyone, 'share-02-shared-page');
    const checked = await pageAs(null, { axe: true });
    await checked.goto(shareUrl);
    await expectCount(checked.getByTestId('turn'), 2);
    expect(await accessibilityViolations(checked)).toEqual([]);

    // Continue: it asks to sign in first, then opens a session of bob's own holding the conversation.
    await anyone.getByTestId('shared-continue').click();
    await anyone.getByTestId('shared-sign-in').getByTestId('credential-input').fill(bobToken);
    await anyone.getByTestId('shared-sign-in').getByTestId('sign-in').click();
    await anyone.waitForURL(/#\/sessions\/[^/]+$/);
    const forkId = decodeURIComponent(anyone.url().split('/').pop()!);
    await expectCount(anyone.getByTestId('turn'), 2);
    await expectText(anyone.getByTestId('session-title'), 'Trip ideas');
    const forked = await api<{ userId: string; metadata: Record<string, unknown> }>(
      'GET',
      `/v1/sessions/${forkId}`,
    );
    expect(forked.userId).toBe('bob');
    await screenshots(anyone, 'share-03-continued');
  });

  it('tells another tenant it cannot continue the conversation', async () => {
    // Its fork is refused (a 404 the page logs).
    const stranger = await pageAs(otherKey, { expectErrors: true });
    await stranger.goto(shareUrl);
    await expectCount(stranger.getByTestId('turn'), 2);
    await stranger.getByTestId('shared-continue').click();
    await expectText(stranger.getByTestId('shared-refusal'), /belongs to another workspace/);
  });

  it('revoked, the link says it is not found', async () => {
    await alice.getByTestId('share-revoke').click();
    await expectVisible(alice.getByTestId('share-revoked'));
    const anyone = await pageAs(null, { expectErrors: true });
    await anyone.goto(shareUrl);
    await expectVisible(anyone.getByTestId('shared-missing'));
    await screenshots(anyone, 'share-04-revoked');
  });

  it('the playground list shows a session’s status as it changes, beside its header', async () => {
    const slow = await api<{ id: string }>('POST', '/v1/sessions', {
      model: 'mock:echo',
      title: 'Slow one',
      opts: { delayMs: 1_500 },
    });
    const page = await pageAs(apiKey);
    await page.goto(`${t.url}/#/sessions/${slow.id}`);
    const listed = page.locator(`[data-testid="session-item"][data-session-id="${slow.id}"] .status`);
    await expectText(listed, 'idle');
    await api('POST', `/v1/sessions/${slow.id}/prompt`, { content: 'take your time' });
    await expectText(listed, 'busy');
    await expectText(page.getByTestId('session-status'), 'busy');
    await expectText(listed, 'idle');
    await expectText(page.getByTestId('session-status'), 'idle');
  });

  it('the dashboard shows each model’s and each user’s figures over a chosen window', async () => {
    const page = await pageAs(apiKey);
    await page.goto(`${t.url}/#/dashboard`);
    const row = (key: string) => page.locator(`[data-testid="model-stats-row"][data-key="${key}"]`);
    // Alice's three prompts and the slow one's: four runs of mock:echo; one rating, up.
    await expectText(row('mock:echo').getByTestId('model-stats-runs'), '4');
    await expectText(row('mock:echo').getByTestId('model-stats-thumbs'), '100% of 1');
    await expectText(row('mock:echo').getByTestId('model-stats-errors'), '0 (0%)');
    await expectText(
      row('mock:echo').getByTestId('model-stats-latency'),
      /^\d+(\.\d)? m?s \/ \d+(\.\d)? m?s$/,
    );
    await expectText(row('mock:echo').getByTestId('model-stats-ttft'), /^\d+(\.\d)? m?s \/ \d+(\.\d)? m?s$/);
    await page.getByTestId('model-stats-by-user').click();
    await expectText(row('alice').getByTestId('model-stats-runs'), '3');
    await expectText(row('alice').getByTestId('model-stats-thumbs'), '100% of 1');
    await expectText(row('').getByTestId('model-stats-key'), '(no user)');
    await page.getByTestId('model-stats-window').selectOption('365');
    await expectText(row('alice').getByTestId('model-stats-runs'), '3');
    await screenshots(page, 'model-stats-01-per-user');
  });

  it('raised no page errors', () => {
    expect(errors.flat()).toEqual([]);
  });
});
