// Summary of a V8 CPU profile (`node --cpu-prof`): where the samples' self time went, by function and by the code
// that owns it (a package under node_modules, a Canopy library, Node's own internals, the garbage collector, idle),
// and by layers of the code given (a sample goes to the first layer on its stack). Used by `npm run bench -- http
// --http-profile=DIR` to show what the api spends its CPU on under load (the HTTP stack against the engine).

import { readFileSync } from 'node:fs';

export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

export interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  startTime: number;
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileEntry {
  name: string;
  /** Share of the busy (non-idle) samples, in percent. */
  percent: number;
}

export interface ProfileSummary {
  /** Busy samples over all samples, in percent. */
  busyPercent: number;
  functions: ProfileEntry[];
  owners: ProfileEntry[];
  /** The busy samples split by the layers given (empty without them), in the order given, then the rest. */
  layers: LayerShare[];
}

/**
 * A layer of the code (the HTTP stack, the engine): a sample belongs to the first layer, in the order given, with a
 * frame anywhere on its stack that `frames` matches, so a layer called by another counts as its own.
 */
export interface Layer {
  name: string;
  frames: RegExp;
}

export interface LayerShare {
  name: string;
  /** Share of the busy samples, in percent. */
  percent: number;
  /** Of those, the share spent in the system calls that write to sockets (writev and the like), in percent. */
  socketWritesPercent: number;
}

/** Native frames that are a socket write's system call (Node's stream_base writes). */
const SOCKET_WRITES = new Set([
  'writev',
  'writeUtf8String',
  'writeBuffer',
  'writeLatin1String',
  'writeAsciiString',
]);

/** The code a frame belongs to: a package, a Canopy library or app, Node's internals, or V8's pseudo-frames. */
export function ownerOf(url: string, functionName: string): string {
  if (!url) {
    if (functionName === '(garbage collector)') return 'garbage collector';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8 / native (program)';
    return 'native';
  }
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg?.[1]) return pkg[1];
  if (url.startsWith('node:')) return 'node internals';
  const lib = /\/(?:dist\/apps\/[^/]+\/)?(libs\/[^/]+|apps\/[^/]+)\//.exec(url);
  if (lib?.[1]) return lib[1];
  return 'other';
}

/**
 * Summarises the samples taken from `skipMs` after the profile started (the profile starts with the process: skip
 * its start-up, module loading included, to see the load alone).
 */
export function summariseCpuProfile(path: string, ...options: SummaryOptions): ProfileSummary {
  return summariseProfile(JSON.parse(readFileSync(path, 'utf8')) as CpuProfile, ...options);
}

/** What a summary skips, how many entries it lists, and the layers it splits the samples by. */
type SummaryOptions = [skipMs?: number, top?: number, layers?: Layer[]];

/** summariseCpuProfile on a profile already read. */
export function summariseProfile(
  profile: CpuProfile,
  ...[skipMs = 0, top = 20, layers = []]: SummaryOptions
): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const layerOf = layerFinder(byId, layers);
  const layerHits = new Map<string, { all: number; writes: number }>();
  const hits = new Map<number, number>();
  let elapsedUs = 0;
  profile.samples.forEach((id, i) => {
    elapsedUs += profile.timeDeltas[i] ?? 0;
    if (elapsedUs >= skipMs * 1000) hits.set(id, (hits.get(id) ?? 0) + 1);
  });
  const functions = new Map<string, number>();
  const owners = new Map<string, number>();
  let busy = 0;
  let total = 0;
  for (const [id, count] of hits) {
    const node = byId.get(id);
    if (!node) continue;
    total += count;
    const owner = ownerOf(node.callFrame.url, node.callFrame.functionName);
    if (owner === 'idle') continue;
    busy += count;
    const name = frameName(node.callFrame);
    functions.set(name, (functions.get(name) ?? 0) + count);
    owners.set(owner, (owners.get(owner) ?? 0) + count);
    if (layers.length > 0) {
      const layerName = layerOf(id);
      const layer = layerHits.get(layerName) ?? { all: 0, writes: 0 };
      layer.all += count;
      if (!node.callFrame.url && SOCKET_WRITES.has(node.callFrame.functionName)) layer.writes += count;
      layerHits.set(layerName, layer);
    }
  }
  return {
    busyPercent: total ? (100 * busy) / total : 0,
    functions: ranked(functions, busy, top),
    owners: ranked(owners, busy, top),
    layers: [...layers.map((l) => l.name), OTHER_LAYER]
      .filter((name) => layerHits.has(name))
      .map((name) => {
        const { all, writes } = layerHits.get(name)!;
        return {
          name,
          percent: busy ? (100 * all) / busy : 0,
          socketWritesPercent: all ? (100 * writes) / all : 0,
        };
      }),
  };
}

/** Where a sample outside every layer goes: the collector, microtask and timer plumbing, V8 itself. */
const OTHER_LAYER = 'other (GC, runtime)';

/** The layer of each profile node (by its id): the first layer with a frame on the node's stack, memoised. */
function layerFinder(byId: ReadonlyMap<number, ProfileNode>, layers: Layer[]): (id: number) => string {
  const parent = new Map<number, number>();
  for (const n of byId.values()) for (const child of n.children ?? []) parent.set(child, n.id);
  const found = new Map<number, string>();
  return (id) => {
    const known = found.get(id);
    if (known !== undefined) return known;
    let best = layers.length;
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const url = byId.get(at)?.callFrame.url ?? '';
      const index = layers.findIndex((l) => l.frames.test(url));
      if (index !== -1 && index < best) best = index;
    }
    const name = layers[best]?.name ?? OTHER_LAYER;
    found.set(id, name);
    return name;
  };
}

/** A frame as the reports name it: function, file:line, and whose code it is. */
function frameName({ functionName, url, lineNumber }: CallFrame): string {
  const file = url ? url.slice(url.lastIndexOf('/') + 1) : '';
  return `${functionName || '(anonymous)'}${file ? ` ${file}:${lineNumber + 1}` : ''} [${ownerOf(url, functionName)}]`;
}

/** The `n` largest entries of `amounts`, each as its share of `whole`. */
function ranked(amounts: Map<string, number>, whole: number, n: number): ProfileEntry[] {
  return [...amounts.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([name, amount]) => ({ name, percent: whole ? (100 * amount) / whole : 0 }));
}

/** A sampling heap profile (HeapProfiler.stopSampling): a call tree with the bytes each frame allocated itself. */
interface HeapProfileNode {
  callFrame: CallFrame;
  selfSize: number;
  children: HeapProfileNode[];
}

export interface AllocationSummary {
  /** Bytes allocated over the profile (sampled, collected objects included). */
  totalBytes: number;
  /** Where: the allocating function, by share of the bytes. */
  functions: ProfileEntry[];
}

/** The functions that allocated most in a sampling heap profile, by their own (self) bytes. */
export function summariseHeapProfile(path: string, top = 12): AllocationSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as { head: HeapProfileNode };
  const functions = new Map<string, number>();
  let totalBytes = 0;
  const stack: HeapProfileNode[] = [profile.head];
  while (stack.length > 0) {
    const node = stack.pop()!;
    stack.push(...node.children);
    if (!node.selfSize) continue;
    totalBytes += node.selfSize;
    const name = frameName(node.callFrame);
    functions.set(name, (functions.get(name) ?? 0) + node.selfSize);
  }
  return { totalBytes, functions: ranked(functions, totalBytes, top) };
}
