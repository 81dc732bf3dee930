// What the browser journeys share: HTTP calls to the app under test, waits on what the page shows (with a
// deadline, never a fixed sleep), screenshots at desktop and phone sizes (checking the phone layout fits 360 px),
// and an accessibility check with axe-core (WCAG 2 A and AA, contrast included).

import { readFileSync } from 'node:fs';
import type { BrowserContext, Locator, Page } from 'playwright-core';
import { eventually } from '@canopy/testing';
import { screenshot } from './browser';

export const DESKTOP = { width: 1440, height: 900 };
export const PHONE = { width: 360, height: 740 };

// The page's globals the in-page checks use (these tests compile without the DOM types). Functions are passed,
// not strings: the UI's Content-Security-Policy forbids eval, which string predicates need.
declare const document: {
  documentElement: { scrollWidth: number; clientWidth: number };
  querySelector(selector: string): { textContent: string | null } | null;
};
declare const axe: {
  run(
    context: unknown,
    options: unknown,
  ): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }>;
};

export async function callApi<T = unknown>(
  baseUrl: string,
  credential: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  const res = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${credential}`, 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return (res.status === 204 ? undefined : await res.json()) as T;
}

/** Waits until the locator's text is (or matches) the expected one. */
export async function expectText(
  locator: Locator,
  expected: string | RegExp,
  timeoutMs = 15_000,
): Promise<void> {
  await eventually(
    async () => {
      const text = (await locator.innerText({ timeout: 1_000 })).trim();
      if (typeof expected === 'string') expect(text).toBe(expected);
      else expect(text).toMatch(expected);
    },
    { timeoutMs, intervalMs: 50 },
  );
}

export async function expectCount(locator: Locator, n: number, timeoutMs = 15_000): Promise<void> {
  await eventually(async () => expect(await locator.count()).toBe(n), { timeoutMs, intervalMs: 50 });
}

export async function expectAttribute(locator: Locator, name: string, value: string): Promise<void> {
  await eventually(async () => expect(await locator.getAttribute(name, { timeout: 1_000 })).toBe(value), {
    timeoutMs: 15_000,
    intervalMs: 50,
  });
}

export async function expectVisible(locator: Locator, visible = true): Promise<void> {
  await eventually(async () => expect(await locator.isVisible()).toBe(visible), {
    timeoutMs: 10_000,
    intervalMs: 50,
  });
}

/** The page fits the viewport's width: nothing forces a sideways scroll. */
export async function expectNoHorizontalOverflow(page: Page): Promise<void> {
  const { scroll, client } = await page.evaluate(() => ({
    scroll: document.documentElement.scrollWidth,
    client: document.documentElement.clientWidth,
  }));
  expect(scroll).toBeLessThanOrEqual(client);
}

/**
 * Screenshots the page as it is (desktop) as `<name>.png`, then at phone size as `<name>.phone.png` after
 * checking the phone layout fits (and, when given, what must show at that size), then goes back to desktop.
 */
export async function screenshots(page: Page, name: string, atPhone?: () => Promise<void>): Promise<void> {
  await screenshot(page, name);
  await page.setViewportSize(PHONE);
  try {
    await expectNoHorizontalOverflow(page);
    await atPhone?.();
    await screenshot(page, `${name}.phone`);
  } finally {
    await page.setViewportSize(DESKTOP);
  }
}

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe-core (WCAG 2.0/2.1 A and AA rules, colour contrast included) on the page and answers the violations.
 * The page must come from a context created with `bypassCSP: true`: axe is injected as a script, which the UI's
 * Content-Security-Policy would refuse.
 */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  await page.addScriptTag({ content: AXE_SOURCE });
  const result = await page.evaluate(() =>
    axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } }),
  );
  return result.violations.map(
    (v) =>
      `${v.id} (${v.impact}): ${v.nodes
        .map((n) => n.target.join(' '))
        .slice(0, 5)
        .join(', ')}`,
  );
}

/** A context for accessibility checks: the CSP bypassed (axe is injected), signed in with `credential`. */
export async function a11yContext(
  newContext: (options: object) => Promise<BrowserContext>,
  credential: string,
): Promise<BrowserContext> {
  const context = await newContext({ viewport: DESKTOP, bypassCSP: true });
  await context.addInitScript((c: string) => {
    (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem(
      'canopy.credential',
      c,
    );
  }, credential);
  return context;
}
