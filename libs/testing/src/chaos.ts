// A chaos harness for a real deployment (Cluster): a steady streaming load (sessions prompted one run after
// another, each run followed to its end), SSE subscribers that resume with `after` when their stream drops, and
// the checks that follow a fault: every run ended within a bound, no session busy, every tree with valid parent
// chains, each completed prompt committed exactly once (failed ones not at all), resumed subscribers given each
// event at most once, no 5xx but 503 (memory is read by process-inspector.ts). The chaos e2e suite and the soak
// bench use it.

/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access -- JSON bodies of any shape, read loosely */

import { createParser } from 'eventsource-parser';

const TERMINAL = new Set(['completed', 'error', 'cancelled']);

export interface ChaosLoadOptions {
  /** Base URLs of the apis (the load spreads over them). */
  apis: () => string[];
  key: string;
  sessions: number;
  /** mock:echo delay per word, and words per prompt: how long a run streams. */
  delayMs?: number;
  words?: number;
  /** SSE subscribers per api (each follows one session, resuming with `after`). */
  subscribersPerApi?: number;
}

export interface ChaosMark {
  runs: number;
  open: TrackedRun[];
  statuses: Map<number, number>;
  at: number;
}

interface TrackedRun {
  sessionId: string;
  runId: string;
  prompt: string;
  status: string | null;
  startedAt: number;
  endedAt: number | null;
}

export interface CaseFigures {
  name: string;
  faults: number;
  runsChecked: number;
  lost: number;
  duplicated: number;
  stuck: number;
  /**
   * Runs open longer than the bound when the check ran, whenever they started: a run started after the fault (while
   * the deployment recovered) that never ends is not in `stuck`, and keeps its session busy all the same.
   */
  stale: number;
  badTrees: number;
  /** Answers >= 500 other than 503 (503 is the documented answer while a dependency is down). */
  fiveHundreds: number;
  unavailable: number;
  /** Events a resumed subscriber got twice. */
  redelivered: number;
  /** Longest time from the end of the fault to the end of a run it caught. */
  maxRecoveryMs: number;
  /** The runs counted as lost or duplicated (run id, status, prompt), to look into. */
  suspects: string[];
  /** Nodes in the load's sessions' trees when they were checked (the data the live sessions hold grows with it). */
  treeNodes: number;
  /** Requests with no answer within their 15 s (status 0: the api went away or hung), since the mark. */
  noAnswer: number;
}

/** One SSE subscriber that reconnects with `after` whenever its stream ends, recording every seq it got. */
class ResumingSubscriber {
  readonly seqs: number[] = [];
  redelivered = 0;
  snapshots = 0;
  private lastSeq: number | undefined;
  private stopped = false;
  private controller: AbortController | null = null;
  private readonly loop: Promise<void>;

  constructor(
    private readonly url: () => string,
    private readonly key: string,
    private readonly sessionId: string,
  ) {
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.controller = new AbortController();
      try {
        const after = this.lastSeq !== undefined ? `&after=${this.lastSeq}` : '';
        const res = await fetch(
          `${this.url()}/v1/sessions/${this.sessionId}/events?token=${this.key}${after}`,
          {
            signal: this.controller.signal,
          },
        );
        if (!res.ok || !res.body) throw new Error(`status ${res.status}`);
        const seen = new Set<number>();
        const parser = createParser({
          onEvent: (m) => {
            if (m.event === 'snapshot') {
              this.snapshots++;
              const seq = (JSON.parse(m.data) as { seq?: number }).seq;
              if (typeof seq === 'number') this.lastSeq = seq;
              return;
            }
            if (m.id === undefined) return;
            const seq = Number(m.id);
            if (seen.has(seq) || (this.lastSeq !== undefined && seq <= this.lastSeq)) this.redelivered++;
            seen.add(seq);
            this.seqs.push(seq);
            this.lastSeq = seq;
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          parser.feed(decoder.decode(chunk, { stream: true }));
        }
      } catch {
        // dropped (process killed, dependency down, aborted): resume below
      }
      if (!this.stopped) await sleep(300);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.controller?.abort();
    await this.loop;
  }
}

export class ChaosLoad {
  readonly runs: TrackedRun[] = [];
  readonly statuses = new Map<number, number>();
  private readonly sessionIds: string[] = [];
  private readonly subscribers: ResumingSubscriber[] = [];
  private stopped = false;
  private workers: Promise<void>[] = [];
  /** Every prompt request: when it was sent, when (and how) it was answered, to explain a window without runs. */
  private readonly prompts: Array<{
    sentAt: number;
    answeredAt: number | null;
    status: number | null;
  }> = [];
  private next = 0;

  constructor(private readonly options: ChaosLoadOptions) {}

  get sessions(): readonly string[] {
    return this.sessionIds;
  }

  private api(): string {
    const apis = this.options.apis();
    return apis[this.next++ % apis.length]!;
  }

  private async request(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; body: any }> {
    try {
      const res = await fetch(`${this.api()}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.options.key}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(15_000),
      });
      this.statuses.set(res.status, (this.statuses.get(res.status) ?? 0) + 1);
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
    } catch {
      // the api went away or timed out mid-request: counted as status 0 (a client retries elsewhere)
      this.statuses.set(0, (this.statuses.get(0) ?? 0) + 1);
      return { status: 0, body: undefined };
    }
  }

  async start(): Promise<void> {
    for (let i = 0; i < this.options.sessions; i++) {
      const res = await this.request('POST', '/v1/sessions', {
        model: 'mock:echo',
        opts: { delayMs: this.options.delayMs ?? 40 },
      });
      if (res.status !== 201) throw new Error(`session creation failed: ${res.status}`);
      this.sessionIds.push(res.body.id as string);
    }
    const apis = this.options.apis();
    const perApi = this.options.subscribersPerApi ?? 2;
    apis.forEach((_, a) => {
      for (let j = 0; j < perApi; j++) {
        const sessionId = this.sessionIds[(a * perApi + j) % this.sessionIds.length]!;
        this.subscribers.push(
          new ResumingSubscriber(
            () => this.options.apis()[a % this.options.apis().length]!,
            this.options.key,
            sessionId,
          ),
        );
      }
    });
    this.workers = this.sessionIds.map((id) => this.drive(id));
  }

  /** One session: a prompt, then follow the run to its end, again until stopped. */
  private async drive(sessionId: string): Promise<void> {
    let k = 0;
    const words = this.options.words ?? 20;
    while (!this.stopped) {
      const prompt = `${sessionId} r${k++} ${'w '.repeat(words).trim()}`;
      const attempt = {
        sentAt: Date.now(),
        answeredAt: null as number | null,
        status: null as number | null,
      };
      this.prompts.push(attempt);
      if (this.prompts.length > 20_000) this.prompts.splice(0, 10_000);
      const res = await this.request('POST', `/v1/sessions/${sessionId}/prompt`, { content: prompt });
      attempt.answeredAt = Date.now();
      attempt.status = res.status;
      if (res.status !== 202 && res.status !== 200) {
        await sleep(300); // busy (a previous run not ended yet), or a dependency down: try again shortly
        continue;
      }
      const run: TrackedRun = {
        sessionId,
        runId: res.body.runId as string,
        prompt,
        status: null,
        startedAt: Date.now(),
        endedAt: null,
      };
      this.runs.push(run);
      await this.follow(run);
    }
  }

  private async follow(run: TrackedRun): Promise<void> {
    while (!this.stopped || run.status === null) {
      const res = await this.request('GET', `/v1/runs/${run.runId}`);
      if (res.status === 200 && TERMINAL.has(res.body.status as string)) {
        run.status = res.body.status as string;
        run.endedAt = Date.now();
        return;
      }
      if (this.stopped && Date.now() - run.startedAt > 120_000) return;
      await sleep(1_000);
    }
  }

  /** Stops prompting and waits for the runs in flight to end (or the bound to pass). */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.workers);
    await Promise.all(this.subscribers.map((s) => s.stop()));
  }

  /**
   * A mark to count from: the runs so far, those of them still open (a fault after the mark catches them too), the
   * statuses answered so far.
   */
  mark(): ChaosMark {
    return {
      runs: this.runs.length,
      open: this.runs.filter((r) => r.status === null),
      statuses: new Map(this.statuses),
      at: Date.now(),
    };
  }

  redelivered(): number {
    return this.subscribers.reduce((n, s) => n + s.redelivered, 0);
  }

  subscriberEvents(): number {
    return this.subscribers.reduce((n, s) => n + s.seqs.length, 0);
  }

  /**
   * Waits until every run since the mark has ended (up to boundMs after the fault ended), then checks the
   * trees of every session. The load keeps running meanwhile.
   */
  async check(
    name: string,
    since: ChaosMark,
    faults: number,
    faultEndedAt: number,
    boundMs: number,
    redeliveredBefore: number,
  ): Promise<CaseFigures> {
    // The runs the fault caught: those streaming when it was marked, and every one started since. (The load's
    // sessions tend to move in step after a fault, all streaming at once; a window of a second may see no prompt.)
    const caught = [...since.open, ...this.runs.slice(since.runs)];
    const deadline = faultEndedAt + boundMs;
    while (Date.now() < deadline && caught.some((r) => r.status === null && r.startedAt <= faultEndedAt)) {
      await sleep(250);
    }
    const stuck = caught.filter((r) => r.status === null && r.startedAt <= faultEndedAt).length;
    const checkedAt = Date.now();
    const stale = this.runs.filter((r) => r.status === null && checkedAt - r.startedAt > boundMs).length;
    const maxRecoveryMs = caught.reduce(
      (m, r) =>
        r.endedAt !== null && r.startedAt <= faultEndedAt ? Math.max(m, r.endedAt - faultEndedAt) : m,
      0,
    );
    const tree = await this.verifyTrees();
    // Runs left open say where they are (their record and the session's registry entry), so a case that fails on
    // them explains itself in the output.
    const open = this.runs.filter(
      (r) =>
        r.status === null &&
        (checkedAt - r.startedAt > boundMs || (caught.includes(r) && r.startedAt <= faultEndedAt)),
    );
    for (const r of open.slice(0, 5)) {
      const run = await this.request('GET', `/v1/runs/${r.runId}`);
      const live = await this.request('GET', `/v1/live/${r.sessionId}`);
      tree.suspects.push(
        `open run=${r.runId} session=${r.sessionId} for ${checkedAt - r.startedAt} ms: run ${run.status} ` +
          `${JSON.stringify(run.body ?? null).slice(0, 300)}; live ${live.status} ${JSON.stringify(live.body ?? null).slice(0, 200)}`,
      );
    }
    if (caught.length === 0) {
      // No run started in the window: say what the prompts sent in it got (and which were still unanswered).
      const sent = this.prompts.filter((p) => p.sentAt >= since.at && p.sentAt <= faultEndedAt);
      const byStatus = new Map<string, number>();
      for (const p of sent) {
        const k = p.status === null ? 'pending' : String(p.status);
        byStatus.set(k, (byStatus.get(k) ?? 0) + 1);
      }
      const inFlight = this.prompts.filter(
        (p) => p.sentAt < since.at && (p.answeredAt ?? Infinity) > since.at,
      );
      const following = this.runs.filter((r) => r.status === null).length;
      tree.suspects.push(
        `no run in the window (${faultEndedAt - since.at} ms): prompts sent ${sent.length} ` +
          `${JSON.stringify([...byStatus])}; prompts already in flight at the mark ${inFlight.length} ` +
          `(oldest ${inFlight.length ? since.at - Math.min(...inFlight.map((p) => p.sentAt)) : 0} ms); runs being followed ${following}`,
      );
    }
    let fiveHundreds = 0;
    let unavailable = 0;
    let noAnswer = 0;
    for (const [status, count] of this.statuses) {
      const delta = count - (since.statuses.get(status) ?? 0);
      if (status === 503) unavailable += delta;
      else if (status === 0) noAnswer += delta;
      else if (status >= 500) fiveHundreds += delta;
    }
    return {
      name,
      faults,
      runsChecked: caught.length,
      lost: tree.lost,
      duplicated: tree.duplicated,
      stuck,
      stale,
      badTrees: tree.bad,
      fiveHundreds,
      unavailable,
      redelivered: this.redelivered() - redeliveredBefore,
      maxRecoveryMs,
      suspects: tree.suspects,
      treeNodes: tree.nodes,
      noAnswer,
    };
  }

  /**
   * Every session's tree against the runs it had: parent chains valid, each completed run's prompt committed
   * once, a failed or cancelled one's not at all. Runs still open are left out.
   */
  private async verifyTrees(): Promise<{
    lost: number;
    duplicated: number;
    bad: number;
    suspects: string[];
    nodes: number;
  }> {
    const suspects: string[] = [];
    let total = 0;
    let lost = 0;
    let duplicated = 0;
    let bad = 0;
    for (const sessionId of this.sessionIds) {
      // The runs' outcomes as known before the tree is read (a run that ends after would race the read).
      const ended = this.runs
        .filter((r) => r.sessionId === sessionId && r.status !== null)
        .map((r) => ({ ...r }));
      let res = await this.request('GET', `/v1/sessions/${sessionId}/tree`);
      for (let i = 0; i < 20 && res.status !== 200; i++) {
        await sleep(250);
        res = await this.request('GET', `/v1/sessions/${sessionId}/tree`);
      }
      if (res.status !== 200) {
        bad++;
        continue;
      }
      const nodes = res.body.nodes as Array<{
        id: number;
        parentId: number | null;
        message: { role: string; content: Array<{ type: string; text?: string }> };
      }>;
      total += nodes.length;
      const byId = new Map(nodes.map((n) => [n.id, n]));
      const orphan = (n: (typeof nodes)[number]) => {
        if (n.parentId === null) return false;
        const parent = byId.get(n.parentId);
        return !parent || parent.id >= n.id;
      };
      if (byId.size !== nodes.length || nodes.some(orphan)) bad++;
      const count = new Map<string, number>();
      for (const n of nodes) {
        if (n.message.role !== 'user') continue;
        const text = n.message.content.map((b) => b.text ?? '').join('');
        count.set(text, (count.get(text) ?? 0) + 1);
      }
      for (const run of ended) {
        const seen = count.get(run.prompt) ?? 0;
        const wrong =
          seen > 1
            ? 'twice'
            : run.status === 'completed' && seen === 0
              ? 'missing'
              : run.status !== 'completed' && seen > 0
                ? 'committed'
                : null;
        if (wrong === 'missing') lost++;
        else if (wrong) duplicated++;
        if (wrong)
          suspects.push(`${wrong} run=${run.runId} status=${run.status} prompt=${run.prompt.slice(0, 50)}`);
      }
    }
    return { lost, duplicated, bad, suspects, nodes: total };
  }
}

export function summaryLine(f: CaseFigures): string {
  return (
    `[chaos] ${f.name}: faults=${f.faults} runs=${f.runsChecked} lost=${f.lost} duplicated=${f.duplicated} ` +
    `stuck=${f.stuck} stale=${f.stale} badTrees=${f.badTrees} 5xx=${f.fiveHundreds} 503=${f.unavailable} ` +
    `redelivered=${f.redelivered} noAnswer=${f.noAnswer} maxRecoveryMs=${f.maxRecoveryMs}` +
    (f.suspects.length > 0 ? `\n  ${f.suspects.join('\n  ')}` : '')
  );
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
