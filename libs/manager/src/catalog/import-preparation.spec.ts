// The import's preparation as a pure function: a body or a line parsed, checked and converted, its nodes cut into
// batches of JSON that keep every parent in its batch or an earlier one; each refusal named as the API names it.

import { canopyDocument } from '@canopy/testing';
import { prepareImport, type PreparedImport } from './import-preparation';

const now = 1_700_000_000_000;

function prepared(input: Parameters<typeof prepareImport>[0]): PreparedImport {
  const result = prepareImport(input);
  if (!result.ok) throw new Error(JSON.stringify(result.error));
  return result.prepared;
}

describe('prepareImport', () => {
  it('cuts the nodes into batches in id order, every parent in its batch or an earlier one', () => {
    const body = JSON.stringify({
      format: 'canopy',
      data: canopyDocument(1_001),
      metadata: { from: 'test' },
    });
    const p = prepared({ kind: 'request', body: new TextEncoder().encode(body), now, batchNodes: 250 });
    expect(p.options).toEqual({ format: 'canopy', metadata: { from: 'test' } });
    expect(p.nodes).toBe(1_001);
    const batches = p.batches.map((b) => JSON.parse(b) as Array<{ id: number; parentId: number | null }>);
    expect(batches.map((b) => b.length)).toEqual([250, 250, 250, 250, 1]);
    const seen = new Set<number>();
    for (const batch of batches) {
      for (const node of batch) {
        if (node.parentId !== null)
          expect(seen.has(node.parentId) || batch.some((n) => n.id === node.parentId)).toBe(true);
      }
      for (const node of batch) seen.add(node.id);
    }
    expect(p.path).toHaveLength(1_001);
    expect(p.nextId).toBe(1_002);
  });

  it('takes one NDJSON line with the options of the query', () => {
    const p = prepared({
      kind: 'line',
      text: JSON.stringify([{ role: 'user', content: 'hi' }]),
      options: { format: 'openai', model: 'mock:echo' },
      now,
      batchNodes: 500,
    });
    expect(p.options.model).toBe('mock:echo');
    expect(p.nodes).toBe(1);
    expect(p.batches).toHaveLength(1);
  });

  it('names each refusal: not JSON, the request’s schema, the conversation’s format', () => {
    expect(prepareImport({ kind: 'request', body: '{"format":', now, batchNodes: 500 })).toMatchObject({
      ok: false,
      error: { kind: 'json' },
    });
    expect(
      prepareImport({ kind: 'request', body: '{"format":"xml","data":1}', now, batchNodes: 500 }),
    ).toMatchObject({
      ok: false,
      error: { kind: 'invalid', issues: [expect.objectContaining({ path: 'format' })] },
    });
    expect(
      prepareImport({
        kind: 'request',
        body: JSON.stringify({ format: 'openai', data: 7 }),
        now,
        batchNodes: 500,
      }),
    ).toMatchObject({ ok: false, error: { kind: 'format', field: 'data' } });
  });
});
