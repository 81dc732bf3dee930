// How a deployable's Node process is started: the flags and environment that `npm start` (scripts/start.mjs) and
// the HTTP bench (bench/http.bench.ts) both use, so the bench measures the process users run. The memory flags
// are for the embedded default only (one process holding the service and its database, where resident memory is
// the point): on an external Postgres they cost about a tenth of the api's runs/s (below); the distributed
// deployables get a larger young generation instead (their latency tail is scavenges: DISTRIBUTED_NODE_ARGS). The
// Dockerfile repeats the malloc settings in its ENV and the distributed flags in its CMD (it cannot import this
// file): change them together.
//
// Figures: the HTTP bench on the embedded runtime, wait mode, 100 sessions, peak resident memory of the api on a
// shared 2-core machine. Before these settings 409-468 MiB (488 with --enable-source-maps, as `npm start` ran it
// then; the deployables now map their stack traces themselves: installSourceMappedStacks), after 314-324 MiB; runs/s within the machine's run-to-run spread (before 121-154, after 128-154). On the
// machine's Postgres (same bench): 288-345 -> 206-208 MiB, runs/s 216-257 -> 179-247 (about 10% fewer on average,
// the api's CPU per run a little higher).

/**
 * Node flags of the embedded default. No `--enable-source-maps`: the entry points map their own frames to the
 * TypeScript sources when a trace is formatted (libs/common/src/source-mapped-stacks.ts); the flag parses every
 * loaded module's map at load, node_modules' too, and cost 15-20 MiB here.
 * - The V8 heap of the service's thread held 150-165 MiB at the peak for 60-80 MiB in use: under the default limit
 *   (a quarter of the machine's memory, up to 4 GiB) V8 lets the old generation grow to four times what survived
 *   the last full collection, and each of the young generation's two semi-spaces to 16 MiB. With a 1 GiB limit
 *   (well above what the service uses; V8 then grows the heap by about 1.6 times) and 4 MiB semi-spaces: 85-115 MiB.
 * - `--v8-pool-size=1`: one V8 background thread instead of four (GC tasks, and compilation, the embedded
 *   database's WebAssembly tier-up included). Each running task's working memory is malloc'd, and four of them at
 *   once on two cores bought nothing: 355-377 -> 313-324 MiB at the same start-up time (6.0-6.6 s first start,
 *   1.8-2.0 s restart); the api's CPU per run rises a little (140% -> 143-146% at similar runs/s).
 */
const EMBEDDED_NODE_ARGS = ['--max-old-space-size=1024', '--max-semi-space-size=4', '--v8-pool-size=1'];

/**
 * The distributed deployables (api on an external Postgres, worker): semi-spaces of 64 MiB instead of V8's 16.
 * Their young objects live for a while (events in flight, queued Redis commands, a run's streaming state), so each
 * scavenge copies many and pauses the event loop for ~10-15 ms, and a process streaming events scavenges several
 * times a second: the cluster bench at 1,000 sessions (2 api + 2 workers on 2 cores) measured each worker paused
 * 2.9-3.5 s of ~21 s in 190-210 scavenges, against the baseline relay's 42-45 scavenges of ~1 ms. With 64 MiB:
 * 46-48 scavenges, 1.1-1.3 s. Runs without profiling: p99 publish-to-receipt 358 ms (default, one run) -> 167-179
 * ms (two runs), CPU per delivered event 2.8x -> 2.3-2.7x the relay's (32 MiB, one run: 203 ms, 2.5x). It costs up
 * to ~100 MiB more resident memory per process under load.
 */
const DISTRIBUTED_NODE_ARGS = ['--max-semi-space-size=64'];

/**
 * glibc's malloc. Each thread that allocates gets an arena of its own (up to 8 per core: the embedded database's
 * thread, V8's background threads, libuv's pool), and what is freed stays in the arena that held it: 125-165 MiB of
 * the api's resident memory at the peak besides the V8 heaps and the WebAssembly memory. Two arenas, and blocks of
 * 128 KiB and more mapped on their own (glibc otherwise raises that threshold as large blocks are freed, so they
 * end up in the arenas): 145-185 -> 105-125 MiB of malloc'd memory in all (70 with one V8 background thread).
 */
const SERVICE_ENV = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' };

/**
 * The node arguments (before the entry point) and the environment additions of a deployable's process; `embedded`:
 * the api on the embedded database (no DATABASE_URL).
 */
export function serviceProcess({ embedded }) {
  return {
    args: embedded ? EMBEDDED_NODE_ARGS : DISTRIBUTED_NODE_ARGS,
    env: { ...SERVICE_ENV },
  };
}
