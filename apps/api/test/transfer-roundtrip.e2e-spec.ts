// The canopy format round-trips exactly through the API (fast-check): for generated trees (branches, several
// roots, every block type, usage on some nodes, session fields, context summaries of some nodes), import -> export
// gives the document back (its usage total summed over its nodes), and export -> import elsewhere -> export gives
// the same bytes. Forks of any
// node of such a tree carry that node's path exactly, as do forks of those forks, before and after the source is
// deleted (copy-on-write forks share the source's nodes until then).

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-call -- JSON bodies of any shape, read loosely by tests */

import fc from 'fast-check';
import { sumUsage, type CanopyDocument } from '@canopy/core';
import { canopyDocumentArb } from '@canopy/testing';
import { Api, newTenant } from './support/api-client';
import { startTestApp, type TestApp } from './support/test-app';

let t: TestApp;
let first: Api;
let second: Api;
let n = 0;

beforeAll(async () => {
  t = await startTestApp({ env: { RATE_LIMIT_PER_KEY: '0', RATE_LIMIT_PER_TENANT: '0' } });
  first = (await newTenant(t, 'first')).api;
  second = (await newTenant(t, 'second')).api;
});

afterAll(async () => {
  await t?.close();
});

it('export -> import -> export is identical for generated trees (property)', async () => {
  await fc.assert(
    fc.asyncProperty(canopyDocumentArb(10), async (generated) => {
      const id = `rt-${++n}`;
      const doc: CanopyDocument = { ...generated, session: { ...generated.session, id } };
      const imported = await first.post('/v1/sessions/import', { format: 'canopy', data: doc });
      expect(imported.status).toBe(201);
      const exported = await first.request('GET', `/v1/sessions/${id}/export`);
      expect(exported.body).toEqual({ ...doc, usage: sumUsage(doc.tree.nodes.map((x) => x.usage)) });

      const again = await second.post('/v1/sessions/import', { format: 'canopy', data: exported.body });
      expect(again.status).toBe(201);
      const res = await fetch(`${t.url}/v1/sessions/${id}/export`, {
        headers: { authorization: `Bearer ${second.credential}` },
      });
      const bytes = await res.text();
      expect(bytes).toBe(JSON.stringify(exported.body));

      // A fork of any node: that node's path, renumbered, messages and usage as they were.
      if (doc.tree.nodes.length) {
        const target = doc.tree.nodes[n % doc.tree.nodes.length]!;
        const fork = await first.post(`/v1/sessions/${id}/fork`, { nodeId: target.id });
        expect(fork.status).toBe(201);
        const chain = [];
        for (let x: number | null = target.id; x !== null; x = doc.tree.nodes[x - 1]!.parentId)
          chain.unshift(doc.tree.nodes[x - 1]!);
        const tree = (await first.get(`/v1/sessions/${fork.body.id}/tree`)).body;
        expect(tree.nodes.map((x: any) => [x.id, x.parentId, x.message, x.usage])).toEqual(
          chain.map((x, i) => [i + 1, i === 0 ? null : i, x.message, x.usage]),
        );
        // Copy-on-write: a fork of the fork carries the same path, and deleting the source changes neither.
        const nodesOf = async (s: string) => (await first.get(`/v1/sessions/${s}/tree`)).body.nodes;
        const forkExport = (await first.get(`/v1/sessions/${fork.body.id}/export`)).body;
        const forkOfFork = await first.post(`/v1/sessions/${fork.body.id}/fork`, {});
        expect(forkOfFork.status).toBe(201);
        expect(await nodesOf(forkOfFork.body.id)).toEqual(tree.nodes);
        expect((await first.delete(`/v1/sessions/${id}`)).status).toBe(204);
        expect((await first.get(`/v1/sessions/${fork.body.id}/export`)).body).toEqual(forkExport);
        expect(await nodesOf(forkOfFork.body.id)).toEqual(tree.nodes);
      }
    }),
    { numRuns: 40 },
  );
});
