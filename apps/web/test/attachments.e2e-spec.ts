// Attachments in a real browser against the real api: an end user attaches an image with the button (a preview
// chip), a text file by pasting it and a PDF by dropping it on the composer; each is uploaded at once and the prompt
// sends them by id with its text. The turn then shows the image itself (through a signed URL) and the other two as
// chips, the tree names them, and the stored prompt refers to the three files; a reload shows the same. Screenshots
// at desktop and phone sizes go to test-artifacts/web.

import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestApp, TEST_ADMIN_KEY, type TestApp } from '../../api/test/support/test-app';
import { launchChromium, pageErrors } from './support/browser';
import { callApi, DESKTOP, expectAttribute, expectCount, expectText, screenshots } from './support/journey';

/** A 1x1 PNG. */
const PNG = Buffer.from(
  '89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8cfc0f01f0005000201a5f2b1a30000000049454e44ae426082',
  'hex',
);
const PDF = '%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n';

let t: TestApp;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let errors: string[];
let apiKey: string;
let aliceToken: string;
let sessionId: string;

const api = <T = unknown>(method: string, path: string, body?: unknown, credential = apiKey) =>
  callApi<T>(t.url, credential, method, path, body);

beforeAll(async () => {
  t = await startTestApp();
  apiKey = (
    await api<{ apiKey: string }>('POST', '/v1/admin/tenants', { name: 'Files Tenant' }, TEST_ADMIN_KEY)
  ).apiKey;
  aliceToken = (await api<{ token: string }>('POST', '/v1/tokens', { userId: 'alice' })).token;
  sessionId = (
    await api<{ id: string }>('POST', '/v1/sessions', { model: 'mock:echo', title: 'With files' }, aliceToken)
  ).id;
  browser = await launchChromium();
  context = await browser.newContext({ viewport: DESKTOP });
  await context.addInitScript((c: string) => {
    (globalThis as unknown as { localStorage: { setItem(k: string, v: string): void } }).localStorage.setItem(
      'canopy.credential',
      c,
    );
  }, aliceToken);
  page = await context.newPage();
  page.setDefaultTimeout(10_000);
  errors = pageErrors(page);
});

afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close();
  await t?.close();
});

/** Dispatches a paste (on the prompt box) or a drop (on the composer) of one file built in the page. */
async function transfer(kind: 'paste' | 'drop', name: string, type: string, text: string): Promise<void> {
  // Run in the page as a script of its own (the DOM's types are the page's, not this file's).
  await page.evaluate(`(() => {
    const data = new DataTransfer();
    data.items.add(new File([${JSON.stringify(text)}], ${JSON.stringify(name)}, { type: ${JSON.stringify(type)} }));
    if (${JSON.stringify(kind)} === 'paste') {
      const box = document.querySelector('[data-testid="prompt-input"]');
      box.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    } else {
      const composer = document.querySelector('[data-testid="composer"]');
      composer.dispatchEvent(new DragEvent('dragover', { dataTransfer: data, bubbles: true, cancelable: true }));
      composer.dispatchEvent(new DragEvent('drop', { dataTransfer: data, bubbles: true, cancelable: true }));
    }
  })()`);
}

describe('web UI journey: attachments', () => {
  it('attaches by button, paste and drop, sends them with the prompt, and shows them in the chat and the tree', async () => {
    await page.goto(`${t.url}/#/sessions/${sessionId}`);
    await page
      .getByTestId('attach-input')
      .setInputFiles({ name: 'pixel.png', mimeType: 'image/png', buffer: PNG });
    await transfer('paste', 'notes.md', 'text/markdown', '# Notes\n\nfrom the clipboard\n');
    await transfer('drop', 'brief.pdf', 'application/pdf', PDF);
    const chips = page.getByTestId('attachment-chip');
    await expectCount(chips, 3);
    for (let i = 0; i < 3; i++) await expectAttribute(chips.nth(i), 'data-state', 'ready');
    await expectCount(page.getByTestId('attachment-preview'), 1);
    await screenshots(page, 'attachments-01-composer');

    // One removed and added again: what is sent is what the tray shows.
    await chips.nth(1).getByTestId('attachment-remove').click();
    await expectCount(chips, 2);
    await transfer('paste', 'notes.md', 'text/markdown', '# Notes\n\nfrom the clipboard\n');
    await expectCount(chips, 3);
    await expectAttribute(chips.nth(2), 'data-state', 'ready');

    await page.getByTestId('prompt-input').fill('What are these?');
    await page.getByTestId('send').click();
    await expectCount(page.getByTestId('attachment-chip'), 0);
    const turn = page.getByTestId('turn').first();
    await expectText(turn.getByTestId('turn-prompt'), 'What are these?');
    // The echo model says back what it was sent: the text, and the text file inlined after it.
    await expectText(turn.getByTestId('reply-text'), /^Echo: What are these\?[\s\S]*<file name="notes\.md"/);
    const image = turn.getByTestId('attachment-image');
    await expectCount(image, 1);
    // Loaded: the signed URL answered the image itself.
    await page.waitForFunction(() => {
      const doc = (
        globalThis as unknown as {
          document: { querySelector(selector: string): { naturalWidth?: number } | null };
        }
      ).document;
      return doc.querySelector('[data-testid="attachment-image"]')?.naturalWidth === 1;
    });
    expect(await image.getAttribute('src')).toMatch(
      /\/v1\/files\/[0-9a-f-]+\/signed\?expires=\d+&signature=/,
    );
    const others = turn.getByTestId('attachment-file');
    await expectCount(others, 2);
    await expectText(others.nth(0), /brief\.pdf/);
    await expectText(others.nth(1), /notes\.md/);
    await expectText(page.getByTestId('tree'), /\[pixel\.png\]/);
    await screenshots(page, 'attachments-02-sent');

    // Stored as references to the three files, which alice's token reads back.
    const messages = await api<{ data?: Array<{ role: string; content: Array<Record<string, unknown>> }> }>(
      'GET',
      `/v1/sessions/${sessionId}/messages`,
      undefined,
      aliceToken,
    );
    const list =
      messages.data ??
      (messages as unknown as Array<{ role: string; content: Array<Record<string, unknown>> }>);
    const prompt = list.find((m) => m.role === 'user')!;
    expect(prompt.content).toEqual([
      { type: 'text', text: 'What are these?' },
      expect.objectContaining({
        type: 'attachment',
        mediaType: 'image/png',
        name: 'pixel.png',
        bytes: PNG.length,
      }),
      expect.objectContaining({ type: 'attachment', mediaType: 'application/pdf', name: 'brief.pdf' }),
      expect.objectContaining({ type: 'attachment', mediaType: 'text/markdown', name: 'notes.md' }),
    ]);
    for (const block of prompt.content.slice(1))
      expect(await api('GET', `/v1/files/${String(block.fileId)}`, undefined, aliceToken)).toMatchObject({
        id: block.fileId,
        userId: 'alice',
      });

    await page.reload();
    await expectCount(page.getByTestId('turn').first().getByTestId('attachment-image'), 1);
    await expectCount(page.getByTestId('turn').first().getByTestId('attachment-file'), 2);
    expect(errors).toEqual([]);
  });
});
