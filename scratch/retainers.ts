import { readFileSync } from 'node:fs';
function load(path: string) {
  const s = JSON.parse(readFileSync(path, 'utf8'));
  const m = s.snapshot.meta; const nf = m.node_fields.length; const ef = m.edge_fields.length;
  const ntypes = m.node_types[0] as string[]; const etypes = m.edge_types[0] as string[];
  return { s, nf, ef, ntypes, etypes, f: m.node_fields as string[], e: m.edge_fields as string[] };
}
const A = load(process.argv[2]!); const B = load(process.argv[3]!);
const idA = new Set<number>(); { const n = A.s.nodes as number[]; const ii = A.f.indexOf('id'); for (let i = 0; i < n.length; i += A.nf) idA.add(n[i + ii]); }
A.s = null;
const { s, nf, ef, ntypes, etypes, f, e } = B; const nodes = s.nodes as number[]; const edges = s.edges as number[]; const str = s.strings as string[];
const ti = f.indexOf('type'), ni = f.indexOf('name'), ii = f.indexOf('id'), eci = f.indexOf('edge_count'), si = f.indexOf('self_size');
const eti = e.indexOf('type'), eni = e.indexOf('name_or_index'), eto = e.indexOf('to_node');
const N = nodes.length / nf;
const retainers: Array<Array<[number, number]>> = Array.from({ length: N }, () => []);
let ep = 0;
for (let i = 0; i < N; i++) {
  const cnt = nodes[i * nf + eci];
  for (let k = 0; k < cnt; k++, ep += ef) {
    const to = edges[ep + eto] / nf; const et = etypes[edges[ep + eti]];
    if (et === 'weak') continue;
    retainers[to].push([i, ep]);
  }
}
const desc = (i: number) => `${ntypes[nodes[i * nf + ti]]}:${str[nodes[i * nf + ni]].slice(0, 50)}`;
const edgeName = (p: number) => { const et = etypes[edges[p + eti]]; const v = edges[p + eni]; return et === 'element' || et === 'hidden' ? `[${v}]` : str[v]; };
const agg = new Map<string, { n: number; size: number }>();
for (let i = 0; i < N; i++) {
  if (idA.has(nodes[i * nf + ii])) continue;
  const t = ntypes[nodes[i * nf + ti]];
  if (t !== 'object' && t !== 'array') continue;
  // path of up to 6 retainers, skipping new objects' internals: stop at the first retainer that is OLD (existed in A)
  let cur = i; const path: string[] = []; const seen = new Set<number>();
  for (let d = 0; d < 12; d++) {
    const r = retainers[cur].find(([p]) => !seen.has(p)); if (!r) break; seen.add(r[0]);
    path.push(`${edgeName(r[1])}<-${desc(r[0])}`);
    cur = r[0];
    if (idA.has(nodes[cur * nf + ii])) break;
  }
  const key = path.slice(-3).join(' | ');
  const a = agg.get(key) ?? { n: 0, size: 0 }; a.n++; a.size += nodes[i * nf + si]; agg.set(key, a);
}
const rows = [...agg.entries()].sort((x, y) => y[1].size - x[1].size).slice(0, 25);
for (const [k, v] of rows) console.log(`${(v.size / 1024).toFixed(0).padStart(7)} KB ${String(v.n).padStart(7)}  ${k}`);
