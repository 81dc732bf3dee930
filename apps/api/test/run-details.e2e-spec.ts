// Details of runs and branches a black-box audit checked, each over the public API: mock:script's
// entry rule (each model step consumes the next entry; an error entry is consumed by the attempt that hit it)
// across retries, tool rounds and branches; a title from the first prompt that has text; a new session's
// snapshot resumable with `after=<its seq>` on both runtimes; a branch's start and rollback in order (tree
// then store; the rollback ending with `state`); turns that say their last run failed.

import { Cluster, eventually } from '@canopy/testing';
import { Api, newTenant, SseReader, type SseEvent } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import type { Session, Turn, TurnResult } from './support/views';

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const milestones = (events: SseEvent[]) =>
  events.map((e) => e.event!).filter((type) => !/_(start|delta|end)$/.test(type));

describe('the embedded runtime', () => {
  let t: TestApp;
  let api: Api;
  let key: string;

  beforeAll(async () => {
    t = await startTestApp();
    ({ api, key } = await newTenant(t, 'deviations'));
  });

  afterAll(async () => {
    await t?.close();
  });

  async function create(body: Record<string, unknown>): Promise<Session> {
    const res = await api.post<Session>('/v1/sessions', body);
    expect(res.status).toBe(201);
    return res.body;
  }

  const replies = (r: TurnResult) => r.items.filter((i) => i.type === 'message' && i.role === 'assistant');

  it('plays mock:script entries by its rule across retries, tool rounds and branches: none twice', async () => {
    const s = await create({
      model: 'mock:script',
      opts: {
        script: [
          { error: 'flaky', retryable: true }, // 0: consumed by the first attempt, the retry plays 1
          { text: 'one', toolCalls: [{ name: 'nosuch', input: {} }] }, // 1: the tool round's step
          { text: 'two' }, // 2: the step after the tool round
          { text: 'three' }, // 3: the next prompt
        ],
      },
    });
    const first = await api.post<TurnResult>(`/v1/sessions/${s.id}/prompt`, { content: 'a', wait: true });
    expect(replies(first.body).map((m) => ('text' in m ? m.text : ''))).toEqual(['one', 'two']);
    const second = await api.post<TurnResult>(`/v1/sessions/${s.id}/prompt`, { content: 'b', wait: true });
    expect(second.body.finalResponse).toBe('three');
    // Branches: the same context plays the same entries again — a regeneration of the second prompt (user node
    // 5) plays entry 3, an edit after the first turn's last reply (node 4) too, a regeneration of the first
    // prompt retries past entry 0 into entry 1 again.
    const regen = await api.post<TurnResult>(`/v1/sessions/${s.id}/branch`, { nodeId: 5, wait: true });
    expect(regen.body.finalResponse).toBe('three');
    const edit = await api.post<TurnResult>(`/v1/sessions/${s.id}/branch`, {
      nodeId: 4,
      content: 'b, edited',
      wait: true,
    });
    expect(edit.body.finalResponse).toBe('three');
    const again = await api.post<TurnResult>(`/v1/sessions/${s.id}/branch`, { nodeId: 1, wait: true });
    expect(replies(again.body).map((m) => ('text' in m ? m.text : ''))).toEqual(['one', 'two']);
  });

  it('titles a session from the first prompt that has text (a prompt of attachments only gives none)', async () => {
    const s = await create({ model: 'mock:echo' });
    const attachment = { type: 'attachment', mediaType: 'text/plain', data: 'aGVsbG8=', name: 'a.txt' };
    await api.post(`/v1/sessions/${s.id}/prompt`, { content: [attachment], wait: true });
    expect((await api.get<Session>(`/v1/sessions/${s.id}`)).body.title).toBeNull();
    await api.post(`/v1/sessions/${s.id}/prompt`, { content: 'Plan the trip to Lisbon', wait: true });
    await eventually(async () =>
      expect((await api.get<Session>(`/v1/sessions/${s.id}`)).body.title).toBe('Plan the trip to Lisbon'),
    );
  });

  it('resumes a new session’s events after the seq of its first snapshot, without a new snapshot', async () => {
    const s = await create({ model: 'mock:echo' });
    const first = await SseReader.open(`${t.url}/v1/sessions/${s.id}/events`, bearer(key));
    const snapshot = await first.waitFor((e) => e.event === 'snapshot');
    first.close();
    await api.patch(`/v1/sessions/${s.id}`, { title: 'after the snapshot' });
    await api.post(`/v1/sessions/${s.id}/prompt`, { content: 'hello', wait: true });
    const resumed = await SseReader.open(
      `${t.url}/v1/sessions/${s.id}/events?after=${snapshot.data.seq as number}`,
      bearer(key),
    );
    await resumed.waitFor((e) => e.event === 'store' && e.data.kind === 'tree');
    resumed.close();
    expect(resumed.events[0]).toMatchObject({ event: 'title', data: { title: 'after the snapshot' } });
    expect(Number(resumed.events[0]!.id)).toBe((snapshot.data.seq as number) + 1);
    expect(resumed.events.map((e) => e.event)).not.toContain('snapshot');
  });

  it('orders a failed branch: tree then store, the rollback ending with state; its turn says it failed', async () => {
    const s = await create({ model: 'mock:script', opts: { script: [{ text: 'fine' }] } });
    await api.post(`/v1/sessions/${s.id}/prompt`, { content: 'q', wait: true });
    await api.patch(`/v1/sessions/${s.id}`, { opts: { script: [{ error: 'model exploded' }] } });
    const sse = await SseReader.open(`${t.url}/v1/sessions/${s.id}/events`, bearer(key));
    await sse.waitFor((e) => e.event === 'snapshot');
    const failed = await api.post<TurnResult>(`/v1/sessions/${s.id}/branch`, { nodeId: 1, wait: true });
    expect(failed.body).toMatchObject({ status: 'error', finalResponse: 'model exploded' });
    await sse.waitFor((e) => e.event === 'state');
    await sse.waitFor((e) => e.event === 'context'); // the token meter of the restored head
    sse.close();
    expect(milestones(sse.events.slice(1))).toEqual([
      'status',
      'tree',
      'store',
      'status',
      'error',
      'tree',
      'store',
      'state',
      'context',
    ]);
    expect(sse.events.find((e) => e.event === 'state')!.data).toMatchObject({
      model: 'mock:script',
      opts: { script: [{ error: 'model exploded' }] },
    });

    // The turn's last run failed: it says so (the path is back on its earlier reply).
    const turns = (await api.get<{ data: Turn[] }>(`/v1/sessions/${s.id}/turns`)).body.data;
    expect(turns).toEqual([
      expect.objectContaining({
        id: 1,
        resId: 2,
        status: 'error',
        error: 'model exploded',
        timestamp: expect.any(Number),
      }),
    ]);
    expect((await api.get<Turn>(`/v1/sessions/${s.id}/turns/1`)).body).toMatchObject({
      status: 'error',
      error: 'model exploded',
    });
    // A later regeneration that completes clears it.
    await api.patch(`/v1/sessions/${s.id}`, { opts: { script: [{ text: 'better' }] } });
    await api.post(`/v1/sessions/${s.id}/branch`, { nodeId: 1, wait: true });
    const after = (await api.get<{ data: Turn[] }>(`/v1/sessions/${s.id}/turns`)).body.data;
    expect(after).toEqual([
      expect.objectContaining({ id: 1, status: 'complete', error: null, regens: [2, 3] }),
    ]);
  });
});

describe('the Redis runtime', () => {
  // The distributed api as deployed (a process of its own; no worker: nothing here runs a turn) over the machine's
  // Redis, under a key prefix of its own.
  let cluster: Cluster;
  let t: { url: string };
  let api: Api;
  let key: string;

  beforeAll(async () => {
    cluster = await new Cluster({ apis: 1, workers: 0 }).start();
    t = { url: cluster.api(1) };
    ({ api, key } = await newTenant(t as TestApp, 'deviations-redis'));
  }, 90_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 60_000);

  it('resumes a new session’s events after the seq of its first snapshot, without a new snapshot', async () => {
    const s = (await api.post<Session>('/v1/sessions', { model: 'mock:echo' })).body;
    const first = await SseReader.open(`${t.url}/v1/sessions/${s.id}/events`, bearer(key));
    const snapshot = await first.waitFor((e) => e.event === 'snapshot');
    first.close();
    await api.patch(`/v1/sessions/${s.id}`, { title: 'one' });
    await api.patch(`/v1/sessions/${s.id}`, { title: 'two' });
    const resumed = await SseReader.open(
      `${t.url}/v1/sessions/${s.id}/events?after=${snapshot.data.seq as number}`,
      bearer(key),
    );
    await resumed.waitFor((e) => e.event === 'title' && e.data.title === 'two');
    resumed.close();
    expect(resumed.events.map((e): unknown[] => [e.event, e.data.title])).toEqual([
      ['title', 'one'],
      ['store', undefined],
      ['title', 'two'],
      ['store', undefined],
    ]);
    expect(Number(resumed.events[0]!.id)).toBe((snapshot.data.seq as number) + 1);
  });
});
