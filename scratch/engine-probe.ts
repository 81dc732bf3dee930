// Where a run's time goes at concurrency 1 in the in-process engine: store calls timed, the rest is CPU/other.
import { randomUUID } from 'node:crypto';
import { performance, monitorEventLoopDelay } from 'node:perf_hooks';
import { DEFAULT_RETRY_POLICY, HookRegistry, ToolRegistry, createModelGateway } from '../libs/agent/src';
import { loadConfig } from '../libs/common/src';
import { tenantScope, type SessionEvent } from '../libs/core/src';
import { InlineTurnQueue, InProcessRunControl, InProcessTimers } from '../libs/queue/src';
import { InProcessActivityFeed, InProcessEventBus, InProcessLiveRegistry } from '../libs/realtime/src';
import { createSessionEngine } from '../libs/manager/src';
import { Database, PostgresSessionStore } from '../libs/store/src';
import { createTestDatabase, prepareTemplate } from '../libs/testing/src';

async function main() {
  await prepareTemplate();
  const testDb = await createTestDatabase();
  const db = new Database({ url: testDb.url, poolMax: 10, txMaxWaitMs: 10_000, txTimeoutMs: 15_000 });
  const store = new PostgresSessionStore(db);
  const timings = new Map<string, { n: number; ms: number }>();
  const proxied = new Proxy(store, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv);
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const t0 = performance.now();
        const r = v.apply(target, args);
        if (r && typeof (r as Promise<unknown>).then === 'function') {
          return (r as Promise<unknown>).finally(() => {
            const e = timings.get(String(prop)) ?? { n: 0, ms: 0 };
            e.n++; e.ms += performance.now() - t0; timings.set(String(prop), e);
          });
        }
        return r;
      };
    },
  });
  const engine = createSessionEngine({
    store: proxied, bus: new InProcessEventBus({ replayLimit: 1000 }), registry: new InProcessLiveRegistry(),
    feed: new InProcessActivityFeed(), queue: new InlineTurnQueue((e) => { throw e; }), control: new InProcessRunControl(),
    timers: new InProcessTimers(), gateway: createModelGateway(loadConfig({})), tools: new ToolRegistry(),
    hooks: new HookRegistry({ parallelTimeoutMs: 500, injectionBudgetTokens: 200 }),
    settings: { instanceId: 'probe', executesRuns: true, idleShutdownMs: 60_000, decisionTimeoutMs: 300_000, coalesceMs: 0,
      toolTimeoutMs: 2000, maxSteps: 10, retry: { ...DEFAULT_RETRY_POLICY, baseDelayMs: 5, maxDelayMs: 20 }, resultTtlMs: 60_000 },
    logger: { info: () => undefined, warn: () => undefined, error: () => undefined },
  } as never);
  engine.processor.register();
  const id = randomUUID();
  await db.withTenant({ tenantId: id }, (tx) => tx.tenant.create({ data: { id, name: `probe-${id.slice(0, 8)}` } }));
  const scope = tenantScope(id);
  let session = await engine.manager.create(scope, { model: 'mock:echo', opts: {} });
  let resolveEnd: ((t: number) => void) | null = null; let final = false;
  const marks: Record<string, number[]> = {};
  let t0 = 0;
  const mark = (k: string) => (marks[k] ??= []).push(performance.now() - t0);
  const listen = (e: SessionEvent) => {
    mark('ev:' + e.type);
    if (e.type === 'turn' && e.data.stop === 'stop') final = true;
    else if (e.type === 'store' && e.data.kind === 'tree' && final) { final = false; resolveEnd?.(performance.now()); }
  };
  let sub = await engine.sessions.subscribe(scope, session.id, listen);
  const run = async (i: number) => {
    if (i % 10 === 0) {
      sub.unsubscribe();
      session = await engine.manager.create(scope, { model: 'mock:echo', opts: {} });
      sub = await engine.sessions.subscribe(scope, session.id, listen);
    }
    t0 = performance.now();
    const done = new Promise<number>((r) => (resolveEnd = r));
    await engine.sessions.prompt(scope, session.id, { content: `prompt ${i}` });
    mark('prompt-returned');
    return (await done) - t0;
  };
  for (let i = 0; i < 50; i++) await run(i);
  timings.clear(); for (const k of Object.keys(marks)) delete marks[k];
  const h = monitorEventLoopDelay({ resolution: 1 }); h.enable();
  const cpu0 = process.cpuUsage(); const w0 = performance.now();
  const lat: number[] = [];
  for (let i = 0; i < 1500; i++) lat.push(await run(i));
  const wall = performance.now() - w0; const cpu = process.cpuUsage(cpu0);
  h.disable();
  lat.sort((a, b) => a - b);
  console.log(`runs 300 p50 ${lat[750].toFixed(2)} ms p10 ${lat[150].toFixed(2)} p90 ${lat[1350].toFixed(2)}; cpu/run ${((cpu.user + cpu.system) / 1000 / 1500).toFixed(2)} ms; wall/run ${(wall / 1500).toFixed(2)}`);
  for (const [k, v] of timings) console.log(`store.${k}: ${v.n / 1500} calls/run, ${(v.ms / v.n).toFixed(2)} ms each`);
  const med = (a: number[]) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
  for (const [k, v] of Object.entries(marks)) console.log(`${k}: n/run ${(v.length / 1500).toFixed(1)} median at ${med(v).toFixed(2)} ms`);
  console.log(`event loop delay p50 ${(h.percentile(50) / 1e6).toFixed(2)} p99 ${(h.percentile(99) / 1e6).toFixed(2)} ms`);
  await engine.manager.shutdown().catch(() => undefined); await db.disconnect(); await testDb.drop();
}
main().catch((e) => { console.error(e); process.exit(1); });
