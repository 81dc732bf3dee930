// The admin's tenant pages in a real browser against the real api (booted in-process on a fresh database, serving
// the built UI), signed in with the admin key: the loading, error (and retry) and empty states of the list, then
// the journey at desktop and at phone size (360 px): create a tenant (its first key shown once, with a copy
// button, and working), see it in the list, a taken name refused whatever its case (409), rename it (a taken
// name refused again), create a key (shown once, then never again) and revoke it (refused by the API from then
// on), set a quota (the API has it) and a storage quota in MiB (saving, a refusal, then its usage in bytes after an
// upload), disable the tenant (its credentials answer 403, the list says so). axe-core
// checks the page with each of those states showing. Screenshots go to test-artifacts/web.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors, screenshot } from './support/browser';
import {
  a11yContext,
  accessibilityViolations,
  callApi,
  DESKTOP,
  expectAttribute,
  expectCount,
  expectNoHorizontalOverflow,
  expectText,
  PHONE,
  screenshots,
} from './support/journey';

// The page's global the clipboard check uses (these tests compile without the DOM types).
declare const navigator: { clipboard: { readText(): Promise<string> } };

const WEB_BUILD = join(process.cwd(), 'dist', 'apps', 'web', 'index.html');

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
const axeFailures: string[] = [];

const byTestId = (id: string) => page.getByTestId(id);
const tenantRow = (name: string) =>
  page.locator('[data-testid="tenant-row"]', { has: page.getByText(name, { exact: true }) });

/** The API's answer to a call with this credential: its status and error code (no throw). */
async function answer(credential: string, path: string): Promise<{ status: number; code?: string }> {
  const res = await fetch(`${t.url}${path}`, { headers: { authorization: `Bearer ${credential}` } });
  const body = (await res.json().catch(() => ({}))) as { error?: { code: string } };
  return { status: res.status, ...(body.error ? { code: body.error.code } : {}) };
}

/** axe-core on the page as it is now; violations are gathered and asserted once, at the end. */
async function checkAccessibility(state: string): Promise<void> {
  for (const v of await accessibilityViolations(page)) axeFailures.push(`${state}: ${v}`);
}

beforeAll(async () => {
  if (!existsSync(WEB_BUILD)) {
    throw new Error(
      `the web UI is not built (${WEB_BUILD}): run \`npm test\` or \`npm run build:web\` first`,
    );
  }
  t = await startTestApp();
  browser = await launchChromium();
  // bypassCSP: axe is injected as a script.
  context = await a11yContext((o) => browser.newContext(o), TEST_ADMIN_KEY);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: t.url });
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  errors = pageErrors(page);
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('web UI journey: the admin manages tenants', () => {
  it('says while the tenants load, when they cannot be loaded (and retries), and when there are none', async () => {
    // The first list answer is held until the loading state was seen, then refused as a failing proxy would.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    await page.route('**/v1/admin/tenants?*', async (route) => {
      await held;
      await route.fulfill({
        status: 503,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'unavailable', message: 'the database is unavailable' } }),
      });
    });
    await page.goto(`${t.url}/#/tenants`);
    await expectText(byTestId('tenants-loading'), 'Loading tenants…');
    release();
    await expectText(byTestId('tenants-error'), /^Could not load the tenants: unavailable: the database/);
    await checkAccessibility('list error');
    await screenshots(page, '40-tenants-error');
    await page.unroute('**/v1/admin/tenants?*');
    await byTestId('tenants-retry').click();
    await expectText(byTestId('tenants-empty'), 'No tenants yet: create the first one above.');
    await expectCount(byTestId('tenants-error'), 0);
    await expectText(byTestId('nav-tenants'), 'Tenants');
    await screenshots(page, '41-tenants-empty');
  });

  for (const [size, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    it(`creates, renames, keys, limits and disables a tenant (${size})`, async () => {
      await page.setViewportSize(viewport);
      // At desktop size each step is also shot at phone size; at phone size the page stays there throughout.
      const shoot = async (shot: string) => {
        if (size === 'desktop') return screenshots(page, shot);
        await expectNoHorizontalOverflow(page);
        await screenshot(page, shot);
      };
      const name = `Acme ${size}`;
      const taken = `Taken ${size}`;
      await callApi(t.url, TEST_ADMIN_KEY, 'POST', '/v1/admin/tenants', { name: taken });
      // Loaded afresh (a goto to the hash it is on would not reload), so the list has the tenant just made.
      await page.goto(`${t.url}/#/tenants`);
      await page.reload();
      await tenantRow(taken).waitFor();

      // Create: the first key is shown once, copies, and works.
      await byTestId('new-tenant-name').fill(name);
      await byTestId('create-tenant').click();
      const firstKey = (await byTestId('once-key-value').innerText()).trim();
      expect(firstKey).toMatch(/^ck_/);
      await byTestId('once-key-copy').click();
      await expectAttribute(byTestId('once-key-copy'), 'data-copied', 'yes');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(firstKey);
      expect(await answer(firstKey, '/v1/sessions')).toEqual({ status: 200 });
      await tenantRow(name).waitFor();
      await checkAccessibility(`${size}, new tenant's key shown`);
      await shoot(`42-tenant-created-${size}`);
      await byTestId('once-key-done').click();
      await expectCount(byTestId('once-key'), 0);
      expect(await page.locator('body').innerText()).not.toContain(firstKey);

      // A taken name, in another case, is refused.
      await byTestId('new-tenant-name').fill(name.toUpperCase());
      await byTestId('create-tenant').click();
      await expectText(
        byTestId('create-tenant-error'),
        `A tenant named “${name.toUpperCase()}” already exists (names are compared without regard to case).`,
      );
      await checkAccessibility(`${size}, name taken`);
      await shoot(`43-tenant-name-taken-${size}`);

      // Open it and rename it: to a taken name (refused), then to a free one (the list follows).
      await tenantRow(name).getByTestId('tenant-name').click();
      await expectText(byTestId('tenant-detail-name'), name);
      await byTestId('tenant-rename-input').fill(taken.toLowerCase());
      await byTestId('tenant-rename').click();
      await expectText(byTestId('tenant-action-error'), /^A tenant named “taken .*” already exists/);
      const renamed = `${name} renamed`;
      await byTestId('tenant-rename-input').fill(renamed);
      await byTestId('tenant-rename').click();
      await expectText(byTestId('tenant-detail-name'), renamed);
      await tenantRow(renamed).waitFor();
      await expectCount(byTestId('tenant-action-error'), 0);

      // A new key: shown once, working; revoked, refused.
      await byTestId('key-name').fill('ci');
      await byTestId('create-key').click();
      const ciKey = (await byTestId('once-key-value').innerText()).trim();
      expect(ciKey).toMatch(/^ck_/);
      expect(await answer(ciKey, '/v1/sessions')).toEqual({ status: 200 });
      await expectCount(byTestId('key-row'), 2);
      await shoot(`44-tenant-key-${size}`);
      await byTestId('once-key-done').click();
      await expectCount(byTestId('once-key'), 0);
      expect(await page.locator('body').innerText()).not.toContain(ciKey);
      const ciRow = page
        .getByTestId('key-row')
        .filter({ has: page.getByTestId('key-label').filter({ hasText: /^ci$/ }) });
      await ciRow.getByTestId('key-revoke').click();
      await expectText(ciRow.getByTestId('key-state'), 'revoked');
      expect(await answer(ciKey, '/v1/sessions')).toEqual({ status: 401, code: 'unauthorized' });

      // A quota: 1000 tokens a day, which the API then has.
      await expectText(byTestId('quotas-empty'), 'No quota: its runs and stored files are not limited.');
      await byTestId('quota-limit-input').fill('1000');
      await byTestId('quota-metric').selectOption('tokens');
      await byTestId('quota-period').selectOption('day');
      await byTestId('quota-set').click();
      await expectText(byTestId('quota-limit'), '1000 tokens a day');
      await expectText(byTestId('quota-usage'), '0');
      const tenantId = (await byTestId('tenant-detail').getAttribute('data-tenant-id'))!;
      const quotas = await callApi<{ tenant: Array<{ metric: string; period: string; limit: number }> }>(
        t.url,
        TEST_ADMIN_KEY,
        'GET',
        `/v1/admin/tenants/${tenantId}/quotas`,
      );
      expect(quotas.tenant).toEqual([
        expect.objectContaining({ metric: 'tokens', period: 'day', limit: 1000 }),
      ]);

      // A storage quota, entered in MiB: saving says so, a refusal is shown (the limit stays to try again), then it
      // is set; its usage, after an upload with the tenant's key, in bytes with a unit.
      let releaseSave!: () => void;
      const saveHeld = new Promise<void>((resolve) => (releaseSave = resolve));
      await page.route('**/v1/admin/tenants/*/quotas', async (route) => {
        if (route.request().method() !== 'PUT') return route.continue();
        await saveHeld;
        await route.fulfill({
          status: 503,
          contentType: 'application/json',
          body: JSON.stringify({ error: { code: 'unavailable', message: 'the database is unavailable' } }),
        });
      });
      await byTestId('quota-metric').selectOption('storage');
      await expectCount(byTestId('quota-period'), 0);
      await byTestId('quota-limit-input').fill('1.5');
      await byTestId('quota-unit').selectOption('MiB');
      await expectText(byTestId('quota-storage-hint'), 'of files stored at any moment (1,572,864 bytes)');
      await byTestId('quota-set').click();
      await expectText(byTestId('quota-set'), 'Saving…');
      await checkAccessibility(`${size}, quota saving`);
      releaseSave();
      await expectText(byTestId('tenant-action-error'), 'unavailable: the database is unavailable');
      await page.unroute('**/v1/admin/tenants/*/quotas');
      await expectText(byTestId('quota-set'), 'Set quota');
      await byTestId('quota-set').click();
      const storageRow = page.locator('[data-testid="quota-row"][data-metric="storage"]');
      await expectText(storageRow.getByTestId('quota-limit'), '1.5 MiB stored (1,572,864 bytes)');
      await expectText(storageRow.getByTestId('quota-usage'), '0 bytes');
      await expectCount(byTestId('tenant-action-error'), 0);
      const uploaded = await fetch(`${t.url}/v1/files?name=notes.bin`, {
        method: 'POST',
        headers: { authorization: `Bearer ${firstKey}`, 'content-type': 'application/octet-stream' },
        body: Buffer.alloc(1536, 7),
      });
      expect(uploaded.status).toBe(201);
      await page.reload();
      await expectText(storageRow.getByTestId('quota-usage'), '1.5 KiB (1,536 bytes)');
      await checkAccessibility(`${size}, storage quota`);
      await shoot(`44b-tenant-storage-quota-${size}`);
      const withStorage = await callApi<{ tenant: Array<{ metric: string; limit: number; usage: number }> }>(
        t.url,
        TEST_ADMIN_KEY,
        'GET',
        `/v1/admin/tenants/${tenantId}/quotas`,
      );
      expect(withStorage.tenant).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ metric: 'tokens', limit: 1000 }),
          expect.objectContaining({ metric: 'storage', limit: 1_572_864, usage: 1536 }),
        ]),
      );

      // Disable: the page and the list say so, and the tenant's key is refused.
      await byTestId('disable-tenant').click();
      await expectText(
        byTestId('tenant-disabled'),
        /^Disabled since .*: its keys and user tokens answer 403/,
      );
      await expectText(tenantRow(renamed).getByTestId('tenant-state'), 'disabled');
      expect(await answer(firstKey, '/v1/sessions')).toEqual({ status: 403, code: 'tenant_disabled' });
      await checkAccessibility(`${size}, disabled tenant`);
      await shoot(`45-tenant-disabled-${size}`);
      await page.setViewportSize(DESKTOP);
    }, 60_000);
  }

  it('found no accessibility violation, nor any page error', () => {
    expect(axeFailures).toEqual([]);
    expect(errors.filter((e) => !/(503|409) \(/.test(e))).toEqual([]);
  });
});
