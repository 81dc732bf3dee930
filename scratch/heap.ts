// scratch: take a heap snapshot through a process's inspector (save), or compare two (diff A B).
import { writeFileSync, readFileSync } from 'node:fs';
import WebSocket from 'ws';

async function snapshot(url: string, out: string) {
  const ws = new WebSocket(url);
  let next = 0; const chunks: string[] = [];
  const pending = new Map<number, (v: unknown) => void>();
  ws.on('message', (d: Buffer) => {
    const m = JSON.parse(d.toString());
    if (m.method === 'HeapProfiler.addHeapSnapshotChunk') chunks.push(m.params.chunk);
    else if (m.id && pending.has(m.id)) { pending.get(m.id)!(m.result); pending.delete(m.id); }
  });
  await new Promise((r) => ws.once('open', r));
  const call = (method: string, params = {}) => new Promise((r) => { const id = ++next; pending.set(id, r); ws.send(JSON.stringify({ id, method, params })); });
  await call('HeapProfiler.collectGarbage');
  await call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  writeFileSync(out, chunks.join(''));
  ws.close();
}

function summary(path: string) {
  const s = JSON.parse(readFileSync(path, 'utf8'));
  const f = s.snapshot.meta.node_fields as string[]; const types = s.snapshot.meta.node_types[0] as string[];
  const n = f.length; const nodes = s.nodes as number[]; const strings = s.strings as string[];
  const ti = f.indexOf('type'), ni = f.indexOf('name'), si = f.indexOf('self_size');
  const agg = new Map<string, { count: number; size: number }>();
  for (let i = 0; i < nodes.length; i += n) {
    const type = types[nodes[i + ti]]; let name = strings[nodes[i + ni]];
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(string)';
    if (type === 'code') name = '(code)';
    const key = `${type}:${name.slice(0, 80)}`;
    const a = agg.get(key) ?? { count: 0, size: 0 }; a.count++; a.size += nodes[i + si]; agg.set(key, a);
  }
  return agg;
}

async function main() {
  const [cmd, a, b] = process.argv.slice(2);
  if (cmd === 'save') return snapshot(a!, b!);
  const A = summary(a!), B = summary(b!);
  const rows = [...new Set([...A.keys(), ...B.keys()])].map((k) => ({ k, dc: (B.get(k)?.count ?? 0) - (A.get(k)?.count ?? 0), ds: (B.get(k)?.size ?? 0) - (A.get(k)?.size ?? 0), c: B.get(k)?.count ?? 0 }));
  rows.sort((x, y) => y.ds - x.ds);
  for (const r of rows.slice(0, 30)) console.log(`${(r.ds / 1024).toFixed(0).padStart(8)} KB ${String(r.dc).padStart(8)} objs (now ${r.c})  ${r.k}`);
}
main().catch((e) => { console.error(e); process.exit(1); });
