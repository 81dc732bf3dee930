// POST /v1/sessions/:id/open: reconciling start options with what was stored, over the API. A controller's start options meet the
// persisted state field by field — the persisted model wins while it is usable and the start model replaces one
// that is not; system and opts from the start options win and are persisted; the title is never a start option —
// and a `state` event reports the result. An observer opens a session as it is. The answer says whether the open
// made the session live and from which seq to follow its events.

import { Canopy } from '@canopy/client';
import { tenantScope } from '@canopy/core';
import { SESSION_STORE, type SessionStore } from '@canopy/store';
import { Api, newTenant, SseReader } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';
import type { Session, SessionDetail } from './support/views';

let t: TestApp;
let api: Api;
let key: string;
let tenantId: string;

beforeAll(async () => {
  t = await startTestApp();
  ({ api, key, tenantId } = await newTenant(t, 'open'));
});

afterAll(async () => {
  await t?.close();
});

const bearer = () => ({ authorization: `Bearer ${key}` });

async function create(body: Record<string, unknown>): Promise<Session> {
  const res = await api.post<Session>('/v1/sessions', { model: 'mock:echo', ...body });
  expect(res.status).toBe(201);
  return res.body;
}

interface Opened {
  session: SessionDetail;
  opened: 'started' | 'existing';
  resolution: Record<'model' | 'system' | 'opts', 'persisted' | 'start'>;
  seq: number;
}

describe('a controller’s start options', () => {
  it('keep the persisted model and title, and apply system and opts, reported by a state event', async () => {
    const s = await create({ title: 'Stored', system: 'old system', opts: { delayMs: 0 } });
    const res = await api.post<Opened>(`/v1/sessions/${s.id}/open`, {
      model: 'mock:script',
      system: 'new system',
      opts: { temperature: 0.3 },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      session: expect.objectContaining({
        id: s.id,
        title: 'Stored',
        model: 'mock:echo',
        system: 'new system',
        opts: { temperature: 0.3 },
        status: 'idle',
        live: { controllers: 0, observers: 0 },
      }),
      opened: 'started',
      resolution: { model: 'persisted', system: 'start', opts: 'start' },
      seq: expect.any(Number),
    });
    expect((await api.get<SessionDetail>(`/v1/sessions/${s.id}`)).body).toMatchObject({
      model: 'mock:echo',
      system: 'new system',
      opts: { temperature: 0.3 },
      title: 'Stored',
    });
    // The open's own events come before its seq: following from it misses nothing and repeats nothing.
    const sse = await SseReader.open(`${t.url}/v1/sessions/${s.id}/events?after=${res.body.seq}`, bearer());
    await api.patch(`/v1/sessions/${s.id}`, { title: 'later' });
    await sse.waitFor((e) => e.event === 'title');
    sse.close();
    expect(sse.events[0]).toMatchObject({ event: 'title', id: String(res.body.seq + 1) });
  });

  it('announce the reconciled state on the session’s events, persisting only what changed', async () => {
    const s = await create({ system: 'same' });
    const sse = await SseReader.open(`${t.url}/v1/sessions/${s.id}/events`, bearer());
    await sse.waitFor((e) => e.event === 'snapshot');
    const res = await api.post<Opened>(`/v1/sessions/${s.id}/open`, { system: 'same', opts: { a: 1 } });
    expect(res.body).toMatchObject({ opened: 'existing', resolution: { system: 'start', opts: 'start' } });
    await sse.waitFor((e) => e.event === 'store');
    sse.close();
    const after = sse.events.slice(1);
    expect(after.map((e) => e.event)).toEqual(['state', 'store']);
    expect(after[0]!.data).toEqual({
      model: 'mock:echo',
      system: 'same',
      opts: { a: 1 },
      tools: [],
      metadata: {},
    });
    expect(after[1]!.data).toEqual({ ok: true, kind: 'state' });
  });

  it('replace a persisted model that can no longer be used; without one the open is refused', async () => {
    const s = await create({});
    // A model whose provider this deployment no longer has (written past the API's own check).
    const store = t.app.get<SessionStore>(SESSION_STORE);
    await store.updateState(tenantScope(tenantId), s.id, { model: 'anthropic:retired-model' });
    const refused = await api.post(`/v1/sessions/${s.id}/open`, {});
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'bad_request', details: { field: 'model' } });
    const res = await api.post<Opened>(`/v1/sessions/${s.id}/open`, { model: 'mock:echo' });
    expect(res.body).toMatchObject({ resolution: { model: 'start' }, session: { model: 'mock:echo' } });
    const run = await api.post(`/v1/sessions/${s.id}/prompt`, { content: 'works again', wait: true });
    expect(run.body.finalResponse).toBe('Echo: works again');
  });

  it('are refused while a run is in flight (idle only), and a title is not one of them', async () => {
    const s = await create({ model: 'mock:script', opts: { script: [{ toolCalls: [{ name: 'ask' }] }] } });
    await api.patch(`/v1/sessions/${s.id}`, {
      tools: [{ name: 'ask', description: 'ask', inputSchema: {} }],
    });
    await api.post(`/v1/sessions/${s.id}/prompt`, { content: 'go', wait: true });
    const busy = await api.post(`/v1/sessions/${s.id}/open`, { system: 'not now' });
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe('session_paused');
    // Nothing to change: a paused session opens as it is.
    const plain = await api.post<Opened>(`/v1/sessions/${s.id}/open`, {});
    expect(plain.status).toBe(200);
    expect(plain.body.session).toMatchObject({ status: 'paused', inFlight: expect.any(Object) });
    const titled = await api.post(`/v1/sessions/${s.id}/open`, { title: 'nope' });
    expect(titled.status).toBe(400);
  });
});

describe('an observer', () => {
  it('opens a session as it is (no events, nothing written) and takes no start options', async () => {
    const s = await create({ system: 'kept' });
    const before = (await api.get<SessionDetail>(`/v1/sessions/${s.id}`)).body;
    const canopy = new Canopy({ baseUrl: t.url, credential: key });
    const opened = await canopy.session(s.id).open({ mode: 'observer' });
    expect(opened).toMatchObject({
      opened: 'started',
      resolution: { model: 'persisted', system: 'persisted', opts: 'persisted' },
      session: { system: 'kept', updatedAt: before.updatedAt },
    });
    const refused = await api.post(`/v1/sessions/${s.id}/open`, { mode: 'observer', system: 'changed' });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details.issues).toContainEqual(expect.objectContaining({ path: 'mode' }));
    expect((await api.get<SessionDetail>(`/v1/sessions/${s.id}`)).body.system).toBe('kept');
  });
});

describe('the OpenAPI document', () => {
  it('describes the open route, the results’ and runs’ new fields and the new refusals', async () => {
    const doc = (await (await fetch(`${t.url}/docs/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { requestBody?: unknown; responses?: Record<string, unknown> }>>;
      components: { schemas: Record<string, { properties?: Record<string, unknown> }> };
    };
    const open = doc.paths['/v1/sessions/{id}/open']!.post!;
    expect(JSON.stringify(open.requestBody)).toContain('OpenSessionDto');
    expect(Object.keys(doc.components.schemas.OpenSessionDto!.properties!).sort()).toEqual([
      'mode',
      'model',
      'opts',
      'system',
    ]);
    expect(Object.keys(doc.components.schemas.OpenedSessionDto!.properties!).sort()).toEqual([
      'opened',
      'resolution',
      'seq',
      'session',
    ]);
    expect(doc.components.schemas.TurnResultDto!.properties).toEqual(
      expect.objectContaining({
        runId: expect.any(Object),
        status: expect.any(Object),
        awaiting: expect.any(Object),
      }),
    );
    expect(doc.components.schemas.JsonResultDto!.properties).toEqual(
      expect.objectContaining({
        run_id: expect.any(Object),
        status: expect.any(Object),
        awaiting: expect.any(Object),
      }),
    );
    expect(doc.components.schemas.RunViewDto!.properties).toHaveProperty('actor');
    expect(JSON.stringify(doc.paths['/v1/sessions/{id}/branch']!.post!.responses)).toContain('tool_use_node');
    expect(JSON.stringify(doc.paths['/v1/sessions/{id}/resume']!.post!.responses)).toContain(
      'details.awaiting',
    );
  });
});
