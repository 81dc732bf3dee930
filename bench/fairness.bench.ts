// Fairness between tenants: one tenant's load never takes another's latency. Tenant B, a bystander, runs a closed
// loop of BYSTANDER_CLIENTS clients against the built api process (each alternating `GET /v1/sessions?limit=20` and
// a `wait: true` prompt on its own mock:echo sessions, a new one after every PROMPTS_PER_SESSION prompts) while
// tenant A, the heavy one, does in turn:
//   idle             nothing (the baseline);
//   import canopy    the largest canopy document an import takes (MAX_IMPORT_NODES nodes, POST /v1/sessions/import);
//   import ndjson    as many nodes in NDJSON_LINES documents of one bulk import (POST /v1/import);
//   webhook answers  prompts at a steady rate, its webhook endpoint answering at once;
//   webhook hangs    the same, its endpoint accepting connections and never answering, so its deliveries pile up.
// B has a webhook endpoint of its own throughout (answering at once): its delivery latency, from the prompt sent to
// the run.completed delivery received, is measured in every phase. B's window during an import opens as the import
// is sent and closes when its answer arrives (at most IMPORT_WINDOW_BOUND_MS). Per phase and
// request kind: p50 / p99 / max of B's 2xx answers, the non-2xx answers counted, and the ratio of B's p99 to its
// idle p99 against the target (at most 2x); the delivery latency likewise (the hanging webhook against the
// answering one). Both runtimes: the embedded default (PGlite in a fresh data directory) and the machine's Postgres
// (a fresh database from the test template), each in a fresh api process per run.
// Options: --fairness-runtimes=embedded,postgres --fairness-runs=N (repeats everything, prints each run's ratios and
// their spread) --fairness-import-nodes=100000 --fairness-measure-ms=15000 (or CANOPY_BENCH_FAIRNESS_* variables).
// The quick run (`npm run bench`): the embedded runtime, 10,000 nodes imported, 4 s windows.

import http from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

import { bytesOf } from '../apps/api/src/http/ndjson';
import { envSchema } from '../libs/common/src/config/config.schema';
import { MAX_IMPORT_NODES } from '../libs/core/src/formats/canopy';
import { canopyDocument, eventually, freePort, prepareTemplate } from '../libs/testing/src';
import { choiceListOption, intOption, type OptionSource } from './lib/options';
import { percentile, spread } from './lib/percentile';
import { ApiProcess, type Runtime } from './lib/processes';
import { formatTime, judge, printTable, ratio, type Verdict } from './lib/report';

/** B's p99 under A's load may be at most this many times its idle p99. */
export const TARGET_RATIO = 2;
const BYSTANDER_CLIENTS = 2;
/** B's sessions per client: a client prompts only its own, so B never finds one of them busy. */
const SESSIONS_PER_CLIENT = 2;
/**
 * Prompts a session of B's takes before its client moves on to a new one (created unmeasured). A prompt's cost grows
 * with its session's path (the model reads the whole conversation): without the turnover B's sessions would hold
 * thousands of turns by the last phase and ten in the idle one, and the ratios would measure B's own growth.
 */
const PROMPTS_PER_SESSION = 20;
/** Longest a window stays open waiting for A's import to answer; B's loop stops there. */
const IMPORT_WINDOW_BOUND_MS = 180_000;
/** Longest the bench waits for A's import to answer at all before it gives up on it. */
const IMPORT_TIMEOUT_MS = 600_000;
/** One request of B's loop fails as a timeout after this. */
const REQUEST_TIMEOUT_MS = 60_000;
/** The bulk import's documents (its nodes split evenly among them). */
const NDJSON_LINES = 4;
/** A's prompts per second in the webhook phases, spread over A_SESSIONS sessions (queued when one is busy). */
const A_PROMPT_RATE = 10;
const A_SESSIONS = 8;
/** A's prompts in flight at most; a tick with this many outstanding is skipped (and counted). */
const A_MAX_IN_FLIGHT = 64;
/** After a window, how long B's deliveries still missing are waited for. */
const DELIVERY_WAIT_MS = 30_000;
/** The api's import body limit when IMPORT_BODY_LIMIT is unset (the bench runs it with the defaults). */
const IMPORT_BODY_LIMIT_BYTES = bytesOf(envSchema.shape.IMPORT_BODY_LIMIT.parse(undefined));

type RuntimeName = Runtime;
type Kind = 'list' | 'prompt';
const KINDS: readonly Kind[] = ['list', 'prompt'];
const KIND_LABEL: Record<Kind, string> = {
  list: 'GET /v1/sessions?limit=20',
  prompt: 'POST …/prompt wait',
};

export type PhaseName = 'idle' | 'import canopy' | 'import ndjson' | 'webhook answers' | 'webhook hangs';
// The webhook phases before the imports: after them the database holds 200,000 more nodes, and the webhook
// phases compare with an idle baseline measured on the database as it was.
const PHASES: readonly PhaseName[] = [
  'idle',
  'webhook answers',
  'webhook hangs',
  'import canopy',
  'import ndjson',
];

/**
 * The phase each phase's B delivery latency is judged against: the webhook that hangs against the one that
 * answers (same load from A, only its endpoint differs), the others against idle.
 */
export const DELIVERY_BASELINE: Record<PhaseName, PhaseName | null> = {
  idle: null,
  'import canopy': 'idle',
  'import ndjson': 'idle',
  'webhook answers': 'idle',
  'webhook hangs': 'webhook answers',
};

export interface FairnessOptions {
  runtimes: RuntimeName[];
  runs: number;
  importNodes: number;
  measureMs: number;
  pauses: {
    /** Unmeasured turns of B's loop after boot, so the idle baseline is a running service's, not a cold one's. */
    warmupMs: number;
    /** A pause between phases, so one phase's tail (a commit's aftermath, the table upkeep) is not the next one's. */
    settleMs: number;
    /** How long A's prompts run before B's window opens in a webhook phase, so that A's deliveries are queued. */
    pileUpMs: number;
  };
}

export function fairnessOptions(from: OptionSource): FairnessOptions {
  const runtimes: RuntimeName[] = ['embedded', 'postgres'];
  return {
    runtimes: choiceListOption(from, 'fairness', 'runtimes', runtimes, from.quick ? ['embedded'] : runtimes),
    runs: intOption(from, 'fairness', 'runs', 1, [1, 100]),
    importNodes: intOption(from, 'fairness', 'import-nodes', from.quick ? 10_000 : MAX_IMPORT_NODES, [
      NDJSON_LINES,
      MAX_IMPORT_NODES,
    ]),
    measureMs: intOption(from, 'fairness', 'measure-ms', from.quick ? 3_000 : 15_000, [1_000, 600_000]),
    pauses: from.quick
      ? { warmupMs: 2_000, settleMs: 1_000, pileUpMs: 3_000 }
      : { warmupMs: 5_000, settleMs: 3_000, pileUpMs: 5_000 },
  };
}

/** One answer to one of B's requests: its time, HTTP status (0: none arrived) and error code. */
export interface Answer {
  ms: number;
  status: number;
  /** The error body's `error.code`, or `timeout` / `network` when no answer arrived. */
  code: string | null;
}

export interface KindFigures {
  /** Answers that were 2xx: the latency figures are theirs. */
  ok: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /** The other answers by `status code` (or the code alone when none arrived), and the slowest of them. */
  failures: Record<string, number>;
  failureMaxMs: number | null;
}

export function kindFigures(answers: readonly Answer[]): KindFigures {
  const ok = answers
    .filter((a) => a.status >= 200 && a.status < 300)
    .map((a) => a.ms)
    .sort((a, b) => a - b);
  const failures: Record<string, number> = {};
  let failureMaxMs: number | null = null;
  for (const a of answers) {
    if (a.status >= 200 && a.status < 300) continue;
    const key = a.status === 0 ? (a.code ?? 'no answer') : [a.status, a.code].filter(Boolean).join(' ');
    failures[key] = (failures[key] ?? 0) + 1;
    failureMaxMs = Math.max(failureMaxMs ?? 0, a.ms);
  }
  return {
    ok: ok.length,
    p50Ms: percentile(ok, 50),
    p99Ms: percentile(ok, 99),
    maxMs: ok.length ? ok[ok.length - 1]! : null,
    failures,
    failureMaxMs,
  };
}

export function failureCount(f: Pick<KindFigures, 'failures'>): number {
  return Object.values(f.failures).reduce((a, b) => a + b, 0);
}

/** p99 under load over the baseline's p99; null when either is unknown. */
export function p99Ratio(load: number | null, baseline: number | null): number | null {
  return load === null || baseline === null || baseline <= 0 ? null : load / baseline;
}

/**
 * Whether a row meets the target: its p99 ratio at most TARGET_RATIO and every one of B's requests answered 2xx
 * (a quick 503 would otherwise look fast).
 */
export function fairnessVerdict(ratio: number | null, failures: number, samples: number): string {
  const reasons: string[] = [];
  if (samples === 0) reasons.push('no 2xx answer');
  else if (ratio === null) reasons.push('no baseline');
  else if (ratio > TARGET_RATIO) reasons.push(`x${ratio.toFixed(1)}`);
  if (failures > 0) reasons.push(`${failures} non-2xx`);
  return reasons.length ? `NOT MET (${reasons.join(', ')})` : 'met';
}

export interface DeliveryFigures {
  /** B's prompts of the window answered with a runId: each should bring one run.completed delivery. */
  expected: number;
  arrived: number;
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
}

/** Delivery latencies: for each run id prompted, from the prompt's start to its delivery's arrival (if any). */
export function deliveryFigures(
  prompted: ReadonlyMap<string, number>,
  arrivals: ReadonlyMap<string, number>,
): DeliveryFigures {
  const latencies: number[] = [];
  for (const [runId, sentAt] of prompted) {
    const at = arrivals.get(runId);
    if (at !== undefined) latencies.push(at - sentAt);
  }
  latencies.sort((a, b) => a - b);
  return {
    expected: prompted.size,
    arrived: latencies.length,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.length ? latencies[latencies.length - 1]! : null,
  };
}

/**
 * The reports of a bulk import's NDJSON answer: the lines imported, their nodes, the lines refused by error code,
 * and the last line the api writes when the import broke off (no `line`: the lines not reported are not imported).
 */
export function bulkImportOutcome(text: string): {
  okLines: number;
  nodes: number;
  failed: Record<string, number>;
  interrupted: string | null;
} {
  let okLines = 0;
  let nodes = 0;
  const failed: Record<string, number> = {};
  let interrupted: string | null = null;
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    let report: { line?: number; ok?: boolean; nodes?: number; error?: { code?: string; message?: string } };
    try {
      report = JSON.parse(line) as typeof report;
    } catch {
      failed['unreadable report'] = (failed['unreadable report'] ?? 0) + 1;
      continue;
    }
    if (report.ok) {
      okLines++;
      nodes += report.nodes ?? 0;
    } else if (report.line === undefined) {
      interrupted = errorText(report.error?.code ?? null, report.error?.message ?? null);
    } else {
      const code = report.error?.code ?? 'error';
      failed[code] = (failed[code] ?? 0) + 1;
    }
  }
  return { okLines, nodes, failed, interrupted };
}

/** An error's code and the start of its message. */
export function errorText(code: string | null, message: string | null): string {
  const text = [code, message].filter(Boolean).join(': ') || 'error';
  return text.length > 90 ? `${text.slice(0, 89)}…` : text;
}

// Results

interface ImportOutcome {
  request: string;
  status: number;
  /** The error code of a failed answer, or the failed lines of a bulk import by code. */
  outcome: string;
  nodesSent: number;
  nodesImported: number;
  wallMs: number;
}

interface WebhookLoad {
  promptsSent: number;
  promptFailures: Record<string, number>;
  skipped: number;
  /** Requests A's receiver got during the phase (answered or left hanging). */
  deliveriesReceived: number;
}

interface PhaseResult {
  phase: PhaseName;
  windowMs: number;
  kinds: Record<Kind, KindFigures>;
  deliveries: DeliveryFigures;
  importOutcome: ImportOutcome | null;
  webhookLoad: WebhookLoad | null;
  /** Whether /readyz answered 200 within its bound before the phase. */
  readyBefore: boolean;
}

interface RuntimeRun {
  run: number;
  runtime: RuntimeName;
  phases: PhaseResult[];
  wallMs: number;
}

export interface FairnessResult {
  options: FairnessOptions;
  runs: RuntimeRun[];
  importBytes: { canopy: number; ndjsonLine: number };
}

// Running

export async function runFairnessBench(options: FairnessOptions): Promise<FairnessResult> {
  const canopyBody = JSON.stringify({ format: 'canopy', data: canopyDocument(options.importNodes) });
  const lineNodes = Math.floor(options.importNodes / NDJSON_LINES);
  const line = JSON.stringify(canopyDocument(lineNodes));
  const ndjsonBody = `${Array.from({ length: NDJSON_LINES }, () => line).join('\n')}\n`;
  for (const [what, bytes] of [
    ['the canopy import', Buffer.byteLength(canopyBody)],
    ['a line of the bulk import', Buffer.byteLength(line)],
  ] as const) {
    if (bytes > IMPORT_BODY_LIMIT_BYTES) {
      throw new Error(`${what} is ${bytes} bytes, over IMPORT_BODY_LIMIT (${IMPORT_BODY_LIMIT_BYTES})`);
    }
  }
  if (options.runtimes.includes('postgres')) await prepareTemplate();
  const imports: Imports = {
    canopy: { body: canopyBody, nodes: options.importNodes },
    ndjson: { body: ndjsonBody, nodes: lineNodes * NDJSON_LINES },
  };
  const runs: RuntimeRun[] = [];
  for (let run = 1; run <= options.runs; run++) {
    for (const runtime of options.runtimes) {
      const started = performance.now();
      const phases = await measureRuntime(runtime, options, imports);
      const wallMs = performance.now() - started;
      runs.push({ run, runtime, phases, wallMs });
      console.log(`  fairness: run ${run}, ${runtime}: ${(wallMs / 1000).toFixed(0)} s`);
    }
  }
  return {
    options,
    runs,
    importBytes: { canopy: Buffer.byteLength(canopyBody), ndjsonLine: Buffer.byteLength(line) },
  };
}

interface Imports {
  canopy: { body: string; nodes: number };
  ndjson: { body: string; nodes: number };
}

async function measureRuntime(
  runtime: RuntimeName,
  options: FairnessOptions,
  imports: Imports,
): Promise<PhaseResult[]> {
  const bReceiver = await Receiver.start('answer');
  const aAnswering = await Receiver.start('answer');
  const aHanging = await Receiver.start('hang');
  let service: ApiProcess | null = null;
  try {
    service = await startApi(runtime);
    const b = await Bystander.create(service, bReceiver);
    const a = new Tenant(service, await service.newTenant('fairness-heavy'));
    await b.window(sleep(options.pauses.warmupMs));

    const results: PhaseResult[] = [];
    for (const phase of PHASES) {
      const readyBefore = await ready(service);
      await sleep(options.pauses.settleMs);
      b.beginPhase();
      let windowMs = 0;
      let importOutcome: ImportOutcome | null = null;
      let webhookLoad: WebhookLoad | null = null;
      if (phase === 'idle') {
        const started = performance.now();
        await b.window(sleep(options.measureMs));
        windowMs = performance.now() - started;
      } else if (phase === 'import canopy' || phase === 'import ndjson') {
        const measured = await importPhase(
          b,
          a,
          phase === 'import canopy'
            ? {
                request: 'POST /v1/sessions/import (canopy)',
                path: '/v1/sessions/import',
                contentType: 'application/json',
                ...imports.canopy,
              }
            : {
                request: `POST /v1/import (${NDJSON_LINES} lines)`,
                path: '/v1/import',
                contentType: 'application/x-ndjson',
                ...imports.ndjson,
              },
        );
        windowMs = measured.windowMs;
        importOutcome = measured.outcome;
      } else {
        const receiver = phase === 'webhook answers' ? aAnswering : aHanging;
        await a.pointWebhookAt(receiver.url);
        const received = receiver.received;
        const generator = new PromptGenerator(a, await a.sessions(A_SESSIONS));
        generator.start();
        await sleep(options.pauses.pileUpMs);
        const started = performance.now();
        await b.window(sleep(options.measureMs));
        windowMs = performance.now() - started;
        webhookLoad = { ...(await generator.stop()), deliveriesReceived: receiver.received - received };
      }
      const kinds = b.figures();
      const deliveries = await b.deliveries(DELIVERY_WAIT_MS);
      results.push({ phase, windowMs, kinds, deliveries, importOutcome, webhookLoad, readyBefore });
    }
    return results;
  } catch (err) {
    throw service ? service.explain(err) : err;
  } finally {
    await service?.stop();
    await Promise.all([bReceiver.close(), aAnswering.close(), aHanging.close()]);
  }
}

/**
 * A's import, and B's window from the moment it is sent until its answer (at most IMPORT_WINDOW_BOUND_MS). Not from
 * the moment its body has been written: the api reads a bulk import's body as it imports its lines, so the last
 * bytes leave only when the import is over or nearly. A's import is waited for afterwards in any case (up to
 * IMPORT_TIMEOUT_MS), so that it does not run into the next phase.
 */
async function importPhase(
  b: Bystander,
  a: Tenant,
  job: { request: string; path: string; contentType: string; body: string; nodes: number },
): Promise<{ windowMs: number; outcome: ImportOutcome }> {
  const started = performance.now();
  const answer = request(a.api.url, {
    method: 'POST',
    path: job.path,
    key: a.key,
    body: job.body,
    contentType: job.contentType,
    timeoutMs: IMPORT_TIMEOUT_MS,
  });
  const bound = new AbortController();
  await b.window(Promise.race([answer, sleep(IMPORT_WINDOW_BOUND_MS, undefined, { signal: bound.signal })]));
  const windowMs = performance.now() - started;
  const done = await answer;
  bound.abort();
  const wallMs = done.endedAt - started;
  let outcome: string;
  let nodesImported = 0;
  if (job.path === '/v1/import' && done.status === 200) {
    const bulk = bulkImportOutcome(done.text);
    nodesImported = bulk.nodes;
    const failed = Object.entries(bulk.failed).map(([code, n]) => `${n} ${code}`);
    outcome =
      `${bulk.okLines}/${NDJSON_LINES} lines ok` +
      (failed.length ? `, refused: ${failed.join(', ')}` : '') +
      (bulk.interrupted ? `, broke off: ${bulk.interrupted}` : '');
  } else if (done.status >= 200 && done.status < 300) {
    nodesImported = job.nodes;
    outcome = 'ok';
  } else {
    outcome = done.status === 0 ? (done.code ?? 'no answer') : errorText(done.code, errorMessage(done.text));
  }
  return {
    windowMs,
    outcome: {
      request: job.request,
      status: done.status,
      outcome,
      nodesSent: job.nodes,
      nodesImported,
      wallMs,
    },
  };
}

// HTTP

/** The `error.message` of an error body, if it is one. */
function errorMessage(text: string): string | null {
  try {
    return (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? null;
  } catch {
    return null;
  }
}

interface Reply extends Answer {
  text: string;
  endedAt: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });

/**
 * One request over a keep-alive connection; never rejects: no answer within timeoutMs is status 0 `timeout`, a
 * broken connection status 0 `network`.
 */
function request(
  baseUrl: string,
  r: {
    method: string;
    path: string;
    key?: string;
    body?: string;
    contentType?: string;
    timeoutMs?: number;
  },
): Promise<Reply> {
  const base = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolveReply) => {
    let settled = false;
    const settle = (status: number, code: string | null, text: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const endedAt = performance.now();
      resolveReply({ status, code, text, ms: endedAt - started, endedAt });
    };
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method: r.method,
        path: r.path,
        agent,
        headers: {
          ...(r.key ? { authorization: `Bearer ${r.key}` } : {}),
          ...(r.body !== undefined
            ? {
                'content-type': r.contentType ?? 'application/json',
                'content-length': Buffer.byteLength(r.body),
              }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => settle(0, 'network', ''));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          let code: string | null = null;
          if (status >= 300) {
            try {
              code = (JSON.parse(text) as { error?: { code?: string } }).error?.code ?? null;
            } catch {
              code = null;
            }
          }
          settle(status, code, text);
        });
      },
    );
    const timer = setTimeout(() => {
      settle(0, 'timeout', '');
      req.destroy();
    }, r.timeoutMs ?? REQUEST_TIMEOUT_MS);
    req.on('error', () => settle(0, 'network', ''));
    req.end(r.body);
  });
}

/** The variables of `names` this process has, to hand on to the api. */
function passThrough(names: readonly string[]): Record<string, string> {
  return Object.fromEntries(names.flatMap((name) => (process.env[name] ? [[name, process.env[name]]] : [])));
}

/** The built api process on a runtime of its own, reaching the local webhook receivers. */
function startApi(runtime: RuntimeName): Promise<ApiProcess> {
  return ApiProcess.start({
    runtime,
    env: {
      // The webhook receivers listen on 127.0.0.1.
      ALLOW_PRIVATE_TARGETS: '*',
      // The import settings to try other values with (their defaults otherwise).
      ...passThrough(['IMPORT_BATCH_NODES', 'IMPORT_BATCH_PAUSE_RATIO', 'HEAVY_OPERATIONS_PER_TENANT']),
    },
  });
}

/** Whether /readyz answers 200 within 60 s (the embedded database may be restarting after a long import). */
async function ready(api: ApiProcess): Promise<boolean> {
  try {
    await eventually(
      async () => {
        const res = await request(api.url, { method: 'GET', path: '/readyz', timeoutMs: 5_000 });
        if (res.status !== 200) throw new Error(`not ready: ${res.status}`);
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    return true;
  } catch {
    return false;
  }
}

/** A tenant's API key and what the bench does as that tenant. */
class Tenant {
  private webhookId: string | null = null;

  constructor(
    readonly api: ApiProcess,
    readonly key: string,
  ) {}

  async post(path: string, body: unknown): Promise<Reply> {
    return request(this.api.url, { method: 'POST', path, key: this.key, body: JSON.stringify(body) });
  }

  /** `n` new mock:echo sessions' ids. */
  async sessions(n: number): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const res = await this.post('/v1/sessions', { model: 'mock:echo' });
      if (res.status !== 201) throw new Error(`creating a session: ${res.status} ${res.text}`);
      ids.push((JSON.parse(res.text) as { id: string }).id);
    }
    return ids;
  }

  /** The tenant's run.completed endpoint, created on first use and moved to `url` after. */
  async pointWebhookAt(url: string): Promise<void> {
    const res = this.webhookId
      ? await request(this.api.url, {
          method: 'PATCH',
          path: `/v1/webhooks/${this.webhookId}`,
          key: this.key,
          body: JSON.stringify({ url }),
        })
      : await this.post('/v1/webhooks', { url, events: ['run.completed'] });
    if (res.status !== 200 && res.status !== 201) {
      throw new Error(`setting a webhook endpoint: ${res.status} ${res.text}`);
    }
    this.webhookId ??= (JSON.parse(res.text) as { id: string }).id;
  }
}

/**
 * Tenant B: its closed loop of clients, each alternating a list and a prompt on its own sessions, and its webhook
 * receiver. Answers and prompted run ids are collected per phase (beginPhase clears them).
 */
class Bystander {
  private answers: Array<Answer & { kind: Kind }> = [];
  /** Run id -> when its prompt was sent (performance.now()), for the prompts of the phase's windows. */
  private prompted = new Map<string, number>();
  private measuring = false;
  /** Per client, the prompts each of its sessions has taken. */
  private readonly promptCounts = Array.from({ length: BYSTANDER_CLIENTS }, () =>
    new Array<number>(SESSIONS_PER_CLIENT).fill(0),
  );

  private constructor(
    private readonly tenant: Tenant,
    private readonly clients: string[][],
    private readonly receiver: Receiver,
  ) {}

  static async create(api: ApiProcess, receiver: Receiver): Promise<Bystander> {
    const tenant = new Tenant(api, await api.newTenant('fairness-bystander'));
    await tenant.pointWebhookAt(receiver.url);
    const clients: string[][] = [];
    for (let i = 0; i < BYSTANDER_CLIENTS; i++) clients.push(await tenant.sessions(SESSIONS_PER_CLIENT));
    return new Bystander(tenant, clients, receiver);
  }

  beginPhase(): void {
    this.answers = [];
    this.prompted = new Map();
    this.measuring = true;
  }

  /**
   * Runs the loop until `stop` settles; every request started before then is waited for and counted, however
   * long it takes (up to REQUEST_TIMEOUT_MS).
   */
  async window(stop: Promise<unknown>): Promise<void> {
    let stopped = false;
    void stop.then(
      () => (stopped = true),
      () => (stopped = true),
    );
    await Promise.all(
      this.clients.map(async (sessions, client) => {
        const prompts = this.promptCounts[client]!;
        // The clients start on different kinds, so both are in flight at any time.
        for (let turn = client; !stopped; turn++) {
          if (turn % 2 === 0) {
            const res = await request(this.tenant.api.url, {
              method: 'GET',
              path: '/v1/sessions?limit=20',
              key: this.tenant.key,
            });
            this.record('list', res);
          } else {
            const slot = Math.floor(turn / 2) % sessions.length;
            if (++prompts[slot]! > PROMPTS_PER_SESSION) {
              sessions[slot] = (await this.tenant.sessions(1))[0]!;
              prompts[slot] = 1;
            }
            const session = sessions[slot]!;
            const sentAt = performance.now();
            const res = await this.tenant.post(`/v1/sessions/${session}/prompt`, {
              content: `turn ${turn}`,
              wait: true,
            });
            this.record('prompt', res);
            if (this.measuring && res.status === 200) {
              const runId = (JSON.parse(res.text) as { runId?: string }).runId;
              if (runId) this.prompted.set(runId, sentAt);
            }
          }
        }
      }),
    );
  }

  private record(kind: Kind, res: Reply): void {
    if (this.measuring) this.answers.push({ kind, ms: res.ms, status: res.status, code: res.code });
  }

  figures(): Record<Kind, KindFigures> {
    this.measuring = false;
    return {
      list: kindFigures(this.answers.filter((a) => a.kind === 'list')),
      prompt: kindFigures(this.answers.filter((a) => a.kind === 'prompt')),
    };
  }

  /** The phase's delivery latencies, once every prompted run's delivery arrived or waitMs passed. */
  async deliveries(waitMs: number): Promise<DeliveryFigures> {
    const deadline = performance.now() + waitMs;
    const missing = () => [...this.prompted.keys()].some((id) => !this.receiver.arrivals.has(id));
    while (missing() && performance.now() < deadline) await sleep(100);
    return deliveryFigures(this.prompted, this.receiver.arrivals);
  }
}

/** A's prompts at A_PROMPT_RATE per second over its sessions, queued behind a busy run, not waited for. */
class PromptGenerator {
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<void>>();
  private sent = 0;
  private skipped = 0;
  private readonly failures: Record<string, number> = {};

  constructor(
    private readonly tenant: Tenant,
    private readonly sessions: string[],
  ) {}

  start(): void {
    this.timer = setInterval(() => this.tick(), 1000 / A_PROMPT_RATE);
  }

  private tick(): void {
    if (this.inFlight.size >= A_MAX_IN_FLIGHT) {
      this.skipped++;
      return;
    }
    const session = this.sessions[this.sent % this.sessions.length]!;
    this.sent++;
    const p = this.tenant
      .post(`/v1/sessions/${session}/prompt`, { content: 'load', ifBusy: 'enqueue' })
      .then((res) => {
        if (res.status < 200 || res.status >= 300) {
          const key =
            res.status === 0 ? (res.code ?? 'no answer') : [res.status, res.code].filter(Boolean).join(' ');
          this.failures[key] = (this.failures[key] ?? 0) + 1;
        }
      })
      .finally(() => this.inFlight.delete(p));
    this.inFlight.add(p);
  }

  /** Stops sending and waits for the prompts in flight. */
  async stop(): Promise<Omit<WebhookLoad, 'deliveriesReceived'>> {
    if (this.timer) clearInterval(this.timer);
    await Promise.all(this.inFlight);
    return { promptsSent: this.sent, promptFailures: this.failures, skipped: this.skipped };
  }
}

/**
 * A local webhook receiver: `answer` answers 204 at once and notes when each run.completed delivery arrived (by
 * the payload's runId); `hang` reads the request and never answers (the sender's timeout ends each attempt).
 */
class Receiver {
  readonly arrivals = new Map<string, number>();
  received = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: http.Server,
    readonly url: string,
  ) {}

  static async start(mode: 'answer' | 'hang'): Promise<Receiver> {
    const port = await freePort();
    let receiver: Receiver | null = null;
    const server = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const at = performance.now();
        receiver!.received++;
        if (mode === 'hang') return;
        try {
          const payload = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { runId?: string } };
          const runId = payload.data?.runId;
          if (runId && !receiver!.arrivals.has(runId)) receiver!.arrivals.set(runId, at);
        } catch {
          // not a delivery: answered all the same
        }
        res.writeHead(204).end();
      });
    });
    server.on('connection', (socket: Socket) => {
      receiver!.sockets.add(socket);
      socket.on('close', () => receiver!.sockets.delete(socket));
    });
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
    receiver = new Receiver(server, `http://127.0.0.1:${port}/hook`);
    return receiver;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    await new Promise((r) => this.server.close(r));
  }
}

// Printing

export function printFairnessReport(title: string, result: FairnessResult): void {
  const { options, runs } = result;
  const time = (v: number | null) => (v === null ? '-' : formatTime(v));
  const ratioText = (r: number | null) => (r === null ? '-' : `x${r.toFixed(2)}`);
  const failuresText = (f: KindFigures) => {
    const entries = Object.entries(f.failures);
    if (entries.length === 0) return '0';
    return `${entries.map(([k, n]) => `${k}:${n}`).join(' ')} (slowest ${time(f.failureMaxMs)})`;
  };
  const phaseOf = (run: RuntimeRun, phase: PhaseName) => run.phases.find((p) => p.phase === phase);

  const rows: string[][] = [];
  for (const run of runs) {
    const idle = phaseOf(run, 'idle');
    for (const p of run.phases) {
      for (const kind of KINDS) {
        const f = p.kinds[kind];
        const baseline = p.phase === 'idle' ? null : (idle?.kinds[kind].p99Ms ?? null);
        const ratio = p.phase === 'idle' ? null : p99Ratio(f.p99Ms, baseline);
        rows.push([
          String(run.run),
          run.runtime,
          kind === 'list' ? p.phase : '',
          KIND_LABEL[kind],
          `${(p.windowMs / 1000).toFixed(1)} s`,
          String(f.ok),
          time(f.p50Ms),
          time(f.p99Ms),
          time(f.maxMs),
          failuresText(f),
          p.phase === 'idle' ? '(baseline)' : ratioText(ratio),
          p.phase === 'idle' ? '' : `<= x${TARGET_RATIO}`,
          p.phase === 'idle'
            ? failureCount(f) > 0
              ? `NOT MET (${failureCount(f)} non-2xx)`
              : ''
            : fairnessVerdict(ratio, failureCount(f), f.ok),
        ]);
      }
    }
  }
  printTable(
    `${title}: B's request latency while A is heavy`,
    [
      'run',
      'runtime',
      "A's phase",
      "B's request",
      'window',
      '2xx',
      'p50',
      'p99',
      'max',
      'non-2xx',
      'p99 / idle',
      'target',
      'verdict',
    ],
    rows,
    new Set([0, 4, 5, 6, 7, 8]),
  );
  console.log(
    `B: ${BYSTANDER_CLIENTS} clients in a closed loop, each alternating the two requests on ${SESSIONS_PER_CLIENT} mock:echo ` +
      `sessions of its own, after ${options.pauses.warmupMs / 1000} s unmeasured; p50/p99/max over the 2xx answers; ` +
      `idle and webhook windows ${options.measureMs / 1000} s, an import's from its request sent to its answer ` +
      `(at most ${IMPORT_WINDOW_BOUND_MS / 1000} s). A row meets the target when its p99 is at most ${TARGET_RATIO}x ` +
      "B's idle p99 of the same run and every answer was 2xx.",
  );

  const aRows: string[][] = [];
  for (const run of runs) {
    for (const p of run.phases) {
      const notReady = p.readyBefore ? '' : ' (the api was not ready before it)';
      if (p.importOutcome) {
        const o = p.importOutcome;
        aRows.push([
          String(run.run),
          run.runtime,
          p.phase,
          o.request,
          o.status === 0 ? 'none' : String(o.status),
          o.outcome + notReady,
          o.nodesSent.toLocaleString('en-US'),
          o.nodesImported.toLocaleString('en-US'),
          formatTime(o.wallMs),
          o.nodesImported > 0 ? Math.round(o.nodesImported / (o.wallMs / 1000)).toLocaleString('en-US') : '-',
        ]);
      } else if (p.webhookLoad) {
        const w = p.webhookLoad;
        const failed = Object.entries(w.promptFailures).map(([k, n]) => `${k}:${n}`);
        aRows.push([
          String(run.run),
          run.runtime,
          p.phase,
          `POST …/prompt at ${A_PROMPT_RATE}/s`,
          '',
          `${w.promptsSent} sent, ${failed.length ? failed.join(' ') : 'all 2xx'}` +
            `${w.skipped ? `, ${w.skipped} skipped` : ''}; its endpoint got ${w.deliveriesReceived}` +
            notReady,
          '',
          '',
          '',
          '',
        ]);
      } else if (!p.readyBefore) {
        aRows.push([String(run.run), run.runtime, p.phase, '', '', notReady.trim(), '', '', '', '']);
      }
    }
  }
  printTable(
    "A's side",
    [
      'run',
      'runtime',
      'phase',
      "A's requests",
      'status',
      'outcome',
      'nodes sent',
      'imported',
      'wall',
      'nodes/s',
    ],
    aRows,
    new Set([0, 6, 7, 8, 9]),
  );
  console.log(
    `Import bodies: canopy ${(result.importBytes.canopy / 1_048_576).toFixed(1)} MiB, bulk ${NDJSON_LINES} lines of ` +
      `${(result.importBytes.ndjsonLine / 1_048_576).toFixed(1)} MiB (IMPORT_BODY_LIMIT ` +
      `${(IMPORT_BODY_LIMIT_BYTES / 1_048_576).toFixed(0)} MiB); nodes/s: nodes imported / the request's wall time.`,
  );

  const dRows: string[][] = [];
  for (const run of runs) {
    for (const p of run.phases) {
      const d = p.deliveries;
      const basePhase = DELIVERY_BASELINE[p.phase];
      const base = basePhase ? phaseOf(run, basePhase)?.deliveries : undefined;
      const ratio = base ? p99Ratio(d.p99Ms, base.p99Ms) : null;
      const missing = d.expected - d.arrived;
      dRows.push([
        String(run.run),
        run.runtime,
        p.phase,
        `${d.arrived}/${d.expected}`,
        time(d.p50Ms),
        time(d.p99Ms),
        time(d.maxMs),
        basePhase ?? '(baseline)',
        basePhase ? ratioText(ratio) : '',
        basePhase ? `<= x${TARGET_RATIO}` : '',
        basePhase
          ? fairnessVerdict(ratio, missing, d.arrived)
          : missing > 0
            ? `NOT MET (${missing} missing)`
            : '',
      ]);
    }
  }
  printTable(
    "B's webhook deliveries: from B's prompt sent to its run.completed delivery received",
    [
      'run',
      'runtime',
      "A's phase",
      'arrived',
      'p50',
      'p99',
      'max',
      'against',
      'p99 ratio',
      'target',
      'verdict',
    ],
    dRows,
    new Set([0, 3, 4, 5, 6, 8]),
  );
  console.log(
    `A missing delivery (not arrived ${DELIVERY_WAIT_MS / 1000} s after the window) counts against the row. ` +
      `In the webhook phases A prompts ${A_PROMPT_RATE}/s over ${A_SESSIONS} sessions from ${options.pauses.pileUpMs / 1000} s ` +
      'before the window; its endpoint answers at once, or accepts and never answers (the sender times out).',
  );

  // The spread of the ratios over the runs.
  const spreadRows: string[][] = [];
  const runNumbers = [...new Set(runs.map((r) => r.run))];
  for (const runtime of options.runtimes) {
    const ofRuntime = runs.filter((r) => r.runtime === runtime);
    for (const phase of PHASES.filter((p) => p !== 'idle')) {
      const measures: Array<[string, (run: RuntimeRun) => number | null]> = [
        ...KINDS.map(
          (kind) =>
            [
              KIND_LABEL[kind],
              (run: RuntimeRun) =>
                p99Ratio(
                  phaseOf(run, phase)?.kinds[kind].p99Ms ?? null,
                  phaseOf(run, 'idle')?.kinds[kind].p99Ms ?? null,
                ),
            ] as [string, (run: RuntimeRun) => number | null],
        ),
        [
          `delivery (against ${DELIVERY_BASELINE[phase]})`,
          (run: RuntimeRun) =>
            p99Ratio(
              phaseOf(run, phase)?.deliveries.p99Ms ?? null,
              phaseOf(run, DELIVERY_BASELINE[phase]!)?.deliveries.p99Ms ?? null,
            ),
        ],
      ];
      measures.forEach(([label, of], i) => {
        const values = runNumbers.map((n) => {
          const run = ofRuntime.find((r) => r.run === n);
          return run ? of(run) : null;
        });
        spreadRows.push([
          i === 0 ? runtime : '',
          i === 0 ? phase : '',
          label,
          ...values.map(ratioText),
          spread(values, (v) => `x${v.toFixed(2)}`),
        ]);
      });
    }
  }
  printTable(
    `p99 ratios per run (${runNumbers.length} run${runNumbers.length === 1 ? '' : 's'}, target <= x${TARGET_RATIO}) and their spread`,
    ['runtime', "A's phase", 'measure', ...runNumbers.map((n) => `run ${n}`), 'min–max'],
    spreadRows,
    new Set(runNumbers.map((_, i) => 3 + i)),
  );
  for (const run of runs) {
    console.log(`run ${run.run}, ${run.runtime}: ${(run.wallMs / 1000).toFixed(0)} s`);
  }
}

/**
 * The targets per runtime, over every run: B's p99 under each of A's loads at most TARGET_RATIO times its idle p99
 * (the worst of its requests and phases judged, the spread over all of them), its webhook deliveries' p99 likewise
 * against their baseline, and every one of B's answers 2xx and delivery arrived.
 */
export function fairnessVerdicts(result: FairnessResult): Verdict[] {
  const verdicts: Verdict[] = [];
  for (const runtime of result.options.runtimes) {
    const runs = result.runs.filter((r) => r.runtime === runtime);
    const requests: number[] = [];
    const deliveries: number[] = [];
    let failures = 0;
    for (const run of runs) {
      const phaseOf = (phase: PhaseName) => run.phases.find((p) => p.phase === phase);
      for (const p of run.phases) {
        for (const kind of KINDS) {
          failures += failureCount(p.kinds[kind]);
          if (p.phase === 'idle') continue;
          const r = p99Ratio(p.kinds[kind].p99Ms, phaseOf('idle')?.kinds[kind].p99Ms ?? null);
          requests.push(r ?? Number.NaN);
        }
        failures += p.deliveries.expected - p.deliveries.arrived;
        const basePhase = DELIVERY_BASELINE[p.phase];
        if (basePhase) {
          const r = p99Ratio(p.deliveries.p99Ms, phaseOf(basePhase)?.deliveries.p99Ms ?? null);
          deliveries.push(r ?? Number.NaN);
        }
      }
    }
    const worst = (values: number[]) =>
      values.some((v) => !Number.isFinite(v)) ? Number.NaN : Math.max(...values);
    const runsText = `${runs.length} run${runs.length === 1 ? '' : 's'}`;
    const section = `fairness (${runtime})`;
    verdicts.push(
      judge(section, `bystander's request p99 under load <= ${TARGET_RATIO}x its idle p99 (worst)`, {
        value: worst(requests),
        limit: TARGET_RATIO,
        kind: 'max',
        format: ratio,
        spread: `${spread(requests, ratio)} over ${requests.length} phase-requests, ${runsText}`,
      }),
      judge(section, `bystander's webhook delivery p99 <= ${TARGET_RATIO}x its baseline (worst)`, {
        value: worst(deliveries),
        limit: TARGET_RATIO,
        kind: 'max',
        format: ratio,
        spread: `${spread(deliveries, ratio)} over ${deliveries.length} phases, ${runsText}`,
      }),
      judge(section, "bystander's non-2xx answers and missing deliveries = 0", {
        value: failures,
        limit: 0,
        kind: 'max',
        format: String,
        spread: runsText,
      }),
    );
  }
  return verdicts;
}
