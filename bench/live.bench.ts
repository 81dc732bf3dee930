// What a live session costs as its conversation grows: the api process's memory per live session, and the bytes of
// its snapshot, for a 10,000-message session against a 10-message one (target <= 2x each). A live session keeps the
// active path's last LIVE_PATH_NODES nodes, so past the bound a session's cost should not follow its length.
//
// The sessions are imported (openai format, messages of 200 to 1,000 characters, 600 on average) and forked into
// K copies of each kind. Each round opens the K sessions of one kind live with one SSE subscriber each (what a chat
// UI holds open), records each snapshot's bytes, and reads the api's V8 heap after a full garbage collection with
// the K open and with none open (through Node's inspector, from outside the process: no code of the service takes
// part); a session's memory is (heap with K open − heap with none, before and after) / K. Then the subscribers close, the sessions
// shut down when idle, and the next kind is measured. An unmeasured pass of both kinds first warms what stays
// (compiled code, caches of the process). The api runs on the machine's Postgres. Options: --live-messages,
// --live-sessions (K), --live-rounds, --live-path-nodes (the api's LIVE_PATH_NODES; 0: its default).

import { eventually } from '../libs/testing/src';
import { inBatches, requestJson } from './lib/api-client';
import { intOption, type OptionSource } from './lib/options';
import { spread } from './lib/percentile';
import { ApiProcess } from './lib/processes';
import { judge, printTable, ratio, type Verdict } from './lib/report';

const SECTION = 'live';
export const LIVE_TARGET = 2;
/** Message lengths in characters, in turn (600 on average: 10 messages hold one of each). */
const LENGTHS = [200, 1_000, 400, 800, 300, 900, 500, 700, 600, 600];
const WORDS = [
  'canopy',
  'session',
  'branch',
  'river',
  'window',
  'token',
  'reply',
  'prompt',
  'stream',
  'tree',
];
/** How long a session with no subscriber stays live in the api measured (its SESSION_IDLE_SHUTDOWN_MS). */
const IDLE_SHUTDOWN_MS = 500;
/** Subscribers opened at once. */
const OPEN_IN_FLIGHT = 8;

export interface LiveBenchOptions {
  /** Messages of the long session. */
  messages: number;
  /** Sessions of each kind open at once (K). */
  sessions: number;
  rounds: number;
  /** The api's LIVE_PATH_NODES; null: its default. */
  pathNodes: number | null;
}

export function liveOptions(from: OptionSource): LiveBenchOptions {
  const pathNodes = intOption(from, SECTION, 'path-nodes', 0, [0, 100_000]);
  return {
    messages: intOption(from, SECTION, 'messages', 10_000, [100, 50_000]),
    sessions: intOption(from, SECTION, 'sessions', from.quick ? 20 : 50, [1, 1_000]),
    rounds: intOption(from, SECTION, 'rounds', from.quick ? 2 : 4, [1, 20]),
    pathNodes: pathNodes === 0 ? null : pathNodes,
  };
}

type Kind = 'short' | 'long';

interface Measured {
  kind: Kind;
  /** V8 heap per live session, bytes. */
  heapPerSession: number;
  /** Resident memory per live session, bytes (what the OS sees; V8 and malloc keep pages, so it lags). */
  rssPerSession: number;
  /** The api's heap after GC with none open, bytes. */
  heapBase: number;
}

interface Snapshot {
  bytes: number;
  nodes: number;
  partial: { firstNodeId: number | null; omitted: number } | null;
}

export interface LiveBenchResult {
  options: LiveBenchOptions;
  snapshots: Record<Kind, Snapshot>;
  rounds: Measured[][];
}

/** A message of LENGTHS[i % 10] characters. */
function messageText(i: number): string {
  const length = LENGTHS[i % LENGTHS.length]!;
  let text = `message ${i + 1}:`;
  for (let w = i; text.length < length; w++) text += ` ${WORDS[w % WORDS.length]}`;
  return text.slice(0, length);
}

/** An SSE subscriber of one session: open once its snapshot arrived, reading (and dropping) what follows. */
class Subscriber {
  private constructor(
    private readonly controller: AbortController,
    readonly snapshot: string,
  ) {}

  static async open(apiUrl: string, key: string, sessionId: string): Promise<Subscriber> {
    const controller = new AbortController();
    const res = await fetch(`${apiUrl}/v1/sessions/${sessionId}/events`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
      signal: controller.signal,
    });
    if (!res.ok || !res.body) throw new Error(`GET …/events: HTTP ${res.status}`);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let buffered = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream of ${sessionId} ended before its snapshot`);
      buffered += decoder.decode(value, { stream: true });
      const frames = buffered.split('\n\n');
      buffered = frames.pop()!;
      const frame = frames.find((f) => f.split('\n').includes('event: snapshot'));
      if (!frame) continue;
      const data = frame
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice('data: '.length))
        .join('\n');
      // Read on until closed, so the api never holds a backlog for it.
      void (async () => {
        try {
          while (!(await reader.read()).done);
        } catch {
          // aborted
        }
      })();
      return new Subscriber(controller, data);
    }
  }

  close(): void {
    this.controller.abort();
  }
}

export async function runLiveBench(options: LiveBenchOptions): Promise<LiveBenchResult> {
  const api = await ApiProcess.start({
    runtime: 'postgres',
    inspect: true,
    env: {
      IMPORT_BODY_LIMIT: '200mb',
      SESSION_IDLE_SHUTDOWN_MS: String(IDLE_SHUTDOWN_MS),
      ...(options.pathNodes !== null ? { LIVE_PATH_NODES: String(options.pathNodes) } : {}),
    },
  });
  try {
    const key = await api.newTenant('live-bench');
    const call = <T>(method: string, path: string, body?: unknown) =>
      requestJson<T>(api.url, key, method, path, body);
    const sessions = async (messages: number): Promise<string[]> => {
      const data = Array.from({ length: messages }, (_, i) => ({
        role: i % 2 === 0 ? 'user' : 'assistant',
        content: messageText(i),
      }));
      const { id } = await call<{ id: string }>('POST', '/v1/sessions/import', {
        format: 'openai',
        data,
        model: 'mock:echo',
      });
      // Copies of it (a fork of the whole path reads as the session does).
      const forks = await inBatches(options.sessions - 1, 4, () =>
        call<{ id: string }>('POST', `/v1/sessions/${id}/fork`, {}),
      );
      return [id, ...forks.map((f) => f.id)];
    };
    const ids: Record<Kind, string[]> = {
      short: await sessions(10),
      long: await sessions(options.messages),
    };

    const liveSessions = async (): Promise<number> => {
      const text = await (await fetch(`${api.url}/metrics`)).text();
      return Number(/^canopy_live_sessions (\d+)/m.exec(text)?.[1] ?? Number.NaN);
    };
    const noneLive = () =>
      eventually(async () => expect0(await liveSessions()), { timeoutMs: 30_000, intervalMs: 100 });
    const open = (kind: Kind) =>
      inBatches(ids[kind].length, OPEN_IN_FLIGHT, (i) => Subscriber.open(api.url, key, ids[kind][i]!));
    const closeAll = async (subscribers: Subscriber[]) => {
      for (const s of subscribers) s.close();
      await noneLive();
    };

    // Warm-up: both kinds open once, unmeasured.
    const snapshots = {} as Record<Kind, Snapshot>;
    for (const kind of ['short', 'long'] as const) {
      const subscribers = await open(kind);
      const data = JSON.parse(subscribers[0]!.snapshot) as {
        tree: { nodes: unknown[]; partial?: Snapshot['partial'] };
      };
      snapshots[kind] = {
        bytes: median(subscribers.map((s) => Buffer.byteLength(s.snapshot))),
        nodes: data.tree.nodes.length,
        partial: data.tree.partial ?? null,
      };
      await closeAll(subscribers);
    }

    const rounds: Measured[][] = [];
    for (let round = 0; round < options.rounds; round++) {
      const measured: Measured[] = [];
      // Alternating which kind goes first, so a drift of the process's memory weighs on both alike.
      const order: Kind[] = round % 2 === 0 ? ['short', 'long'] : ['long', 'short'];
      for (const kind of order) {
        const before = await api.memoryAfterGc();
        const subscribers = await open(kind);
        const during = await api.memoryAfterGc();
        await closeAll(subscribers);
        const after = await api.memoryAfterGc();
        // None open: the mean of before and after (the pool's connections and other buffers of the process come
        // and go by some hundreds of KiB between readings).
        const heapBase = (before.heapUsedBytes + after.heapUsedBytes) / 2;
        const rssBase = (before.rssMb + after.rssMb) / 2;
        const k = subscribers.length;
        measured.push({
          kind,
          heapPerSession: (during.heapUsedBytes - heapBase) / k,
          rssPerSession: ((during.rssMb - rssBase) * 1_048_576) / k,
          heapBase,
        });
      }
      rounds.push(measured);
    }
    return { options, snapshots, rounds };
  } catch (err) {
    throw api.explain(err);
  } finally {
    await api.stop();
  }
}

function expect0(n: number): void {
  if (n !== 0) throw new Error(`${n} sessions still live`);
}

/** The median (of an even count, the mean of the middle two). */
const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = (sorted.length - 1) / 2;
  return (sorted[Math.floor(mid)]! + sorted[Math.ceil(mid)]!) / 2;
};

const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;

/** Per round, the long session's figure over the short one's. */
function heapRatios(result: LiveBenchResult): number[] {
  return result.rounds.map((round) => {
    const at = (kind: Kind) => round.find((m) => m.kind === kind)!.heapPerSession;
    return at('long') / Math.max(at('short'), 1);
  });
}

function boundLabel(options: LiveBenchOptions): string {
  return `LIVE_PATH_NODES ${options.pathNodes ?? 'default'}`;
}

export function printLiveReport(title: string, result: LiveBenchResult): void {
  const { messages, sessions, rounds } = result.options;
  const label: Record<Kind, string> = {
    short: '10 messages',
    long: `${messages.toLocaleString('en')} messages`,
  };
  const kinds = ['short', 'long'] as const;
  printTable(
    `${title}: ${sessions} sessions of each kind open, ${rounds} rounds, ${boundLabel(result.options)}`,
    ['round', 'session', 'heap/session', 'RSS/session', 'heap, none open'],
    result.rounds.flatMap((round, i) =>
      kinds.map((kind) => {
        const m = round.find((r) => r.kind === kind)!;
        return [
          String(i + 1),
          label[kind],
          kib(m.heapPerSession),
          kib(m.rssPerSession),
          `${(m.heapBase / 1_048_576).toFixed(1)} MiB`,
        ];
      }),
    ),
    new Set([2, 3, 4]),
  );
  const perSession = (kind: Kind) =>
    result.rounds.map((round) => round.find((m) => m.kind === kind)!.heapPerSession);
  const heap = heapRatios(result);
  const { short, long } = result.snapshots;
  const held = (s: Snapshot) =>
    s.partial ? `${s.nodes} (${s.partial.omitted.toLocaleString('en')} omitted)` : String(s.nodes);
  printTable(
    `${title}: per live session (heap: median over rounds, spread), and its snapshot`,
    ['figure', label.short, label.long, 'ratio', 'spread'],
    [
      [
        'heap per session',
        kib(median(perSession('short'))),
        kib(median(perSession('long'))),
        ratio(median(heap)),
        spread(heap, ratio),
      ],
      ['snapshot bytes', kib(short.bytes), kib(long.bytes), ratio(long.bytes / short.bytes), '-'],
      ['snapshot nodes', held(short), held(long), ratio(long.nodes / short.nodes), '-'],
    ],
    new Set([1, 2, 3, 4]),
  );
}

export function liveVerdicts(result: LiveBenchResult): Verdict[] {
  const messages = result.options.messages.toLocaleString('en');
  const heap = heapRatios(result);
  const { short, long } = result.snapshots;
  const bound = boundLabel(result.options);
  return [
    judge(SECTION, `heap per live session (${messages} vs 10 messages) <= ${LIVE_TARGET}x`, {
      value: median(heap),
      limit: LIVE_TARGET,
      kind: 'max',
      format: ratio,
      spread: `rounds ${spread(heap, ratio)}, ${bound}`,
    }),
    judge(SECTION, `snapshot bytes (${messages} vs 10 messages) <= ${LIVE_TARGET}x`, {
      value: long.bytes / short.bytes,
      limit: LIVE_TARGET,
      kind: 'max',
      format: ratio,
      spread: `${kib(long.bytes)} / ${kib(short.bytes)}, ${bound}`,
    }),
  ];
}
