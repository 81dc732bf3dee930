// The frontend protocols on the embedded runtime (`npm start`'s: PGlite in the process, the in-process queue): a
// useChat reply whose stream the tab dropped, resumed from the start by a reloaded chat, the session created with
// DEFAULT_MODEL; an AG-UI run on a thread of its own.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { HttpAgent } from '@ag-ui/client';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { eventually } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { canopyTransport, NodeChat, textOf, type ChatMessage } from './support/node-chat';
import { startTestApp, type TestApp } from './support/test-app';

let dataDir: string;
let t: TestApp;
let api: Api;
let key: string;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'canopy-frontend-embedded-'));
  t = await startTestApp({ embeddedDataDir: dataDir, env: { DEFAULT_MODEL: 'mock:echo' } });
  ({ api, key } = await newTenant(t, 'embedded frontend protocols'));
}, 120_000);

afterAll(async () => {
  await t?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

it('resumes a useChat reply after the tab dropped its stream; the session takes DEFAULT_MODEL', async () => {
  const id = `chat-${randomUUID()}`;
  // Long enough to be in flight through the drop, the load and the resume (~3 s).
  const prompt = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
  // No model in the body: the deployment's default; opts only pace the mock model.
  const tab = new NodeChat({ id, transport: canopyTransport(t.url, key, { opts: { delayMs: 15 } }) });
  const sent = tab.sendMessage({ text: prompt });
  await eventually(() => expect(textOf(tab.messages[1]).length).toBeGreaterThan(10), { timeoutMs: 20_000 });
  await tab.stop();
  await sent;
  expect((await api.get(`/v1/sessions/${id}`)).body).toMatchObject({ model: 'mock:echo', status: 'busy' });

  const loaded = (await api.get(`/v1/ui/chat/${id}/messages`)).body as ChatMessage[];
  const reloaded = new NodeChat({ id, transport: canopyTransport(t.url, key), messages: loaded });
  await reloaded.resumeStream();
  expect(reloaded.error).toBeUndefined();
  expect(reloaded.messages.map((m) => [m.role, textOf(m)])).toEqual([
    ['user', prompt],
    ['assistant', `Echo: ${prompt}`],
  ]);
  expect(reloaded.messages[1]!.metadata).toEqual({ nodeId: 2, versions: [2], versionIndex: 0 });
});

it('runs an AG-UI thread', async () => {
  const agent = new HttpAgent({
    url: `${t.url}/v1/ag-ui`,
    headers: { authorization: `Bearer ${key}` },
    threadId: randomUUID(),
  });
  agent.addMessage({ id: randomUUID(), role: 'user', content: 'hello, embedded' });
  const events: BaseEvent[] = [];
  await agent.runAgent({}, { onEvent: ({ event }) => void events.push(event) });
  expect(events[events.length - 1]!.type).toBe(EventType.RUN_FINISHED);
  expect(agent.messages.map((m) => [m.id, m.role, 'content' in m ? m.content : undefined])).toEqual([
    ['1', 'user', 'hello, embedded'],
    ['2', 'assistant', 'Echo: hello, embedded'],
  ]);
});
