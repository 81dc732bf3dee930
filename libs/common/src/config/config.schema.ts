// The one schema of Canopy's environment. Parsed once at boot (main.ts hands it process.env); everything else
// receives the typed CanopyConfig by injection and never reads process.env.

import { availableParallelism } from 'node:os';
import { z } from 'zod';
import { PROVIDERS } from '@canopy/core';
import { parseAllowList, TargetPolicy } from '../net/target-policy';

const bool = z.stringbool({ truthy: ['true', '1', 'yes', 'on'], falsy: ['false', '0', 'no', 'off'] });
const port = z.coerce.number().int().min(0).max(65535);
/** A model name as its provider calls it (MODEL_LIMITS's keys take the same). */
const MODEL_NAME = /^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$/;
/** A comma-separated list of model names (each as the provider calls it, e.g. `gpt-4.1` or `llama3.1:8b`). */
const modelList = z
  .string()
  .transform((v) =>
    v
      .split(',')
      .map((name) => name.trim())
      .filter((name) => name !== ''),
  )
  .pipe(z.array(z.string().regex(MODEL_NAME, 'model names: letters, digits and . _ : / @ -')).max(100));

/** A model's limits as MODEL_LIMITS gives them: its context window, and its output limit when given. */
export interface ConfiguredModelLimits {
  readonly contextWindow: number;
  readonly maxOutputTokens: number | null;
}

/** The largest context window or output limit MODEL_LIMITS takes (a typo's extra digits fail rather than pass). */
const MAX_MODEL_TOKENS = 100_000_000;

/**
 * MODEL_LIMITS: comma-separated `provider:name=window` or `provider:name=window/maxOutput`. A model name may contain
 * ':' and '=' never does, so each entry splits at its last '='; the key is everything before it.
 */
const modelLimits = z.string().transform((v, ctx) => {
  const limits = new Map<string, ConfiguredModelLimits>();
  const problem = (entry: string, why: string) =>
    ctx.addIssue({ code: 'custom', message: `"${entry}": ${why}` });
  for (const raw of v.split(',')) {
    const entry = raw.trim();
    if (entry === '') continue;
    const eq = entry.lastIndexOf('=');
    const key = entry.slice(0, Math.max(eq, 0)).trim();
    const colon = key.indexOf(':');
    const provider = key.slice(0, Math.max(colon, 0));
    const name = key.slice(colon + 1);
    const numbers = /^(\d+)(?:\/(\d+))?$/.exec(entry.slice(eq + 1).trim());
    if (eq < 0 || numbers === null) {
      problem(entry, 'expected provider:name=window or provider:name=window/maxOutput (whole numbers)');
      continue;
    }
    if (!(PROVIDERS as readonly string[]).includes(provider)) {
      problem(entry, `the provider must be one of ${PROVIDERS.join(', ')}`);
      continue;
    }
    if (!MODEL_NAME.test(name)) {
      problem(entry, 'model names: letters, digits and . _ : / @ -');
      continue;
    }
    const contextWindow = Number(numbers[1]);
    const maxOutputTokens = numbers[2] === undefined ? null : Number(numbers[2]);
    if (contextWindow < 1 || contextWindow > MAX_MODEL_TOKENS) {
      problem(entry, `the window must be from 1 to ${MAX_MODEL_TOKENS}`);
    } else if (maxOutputTokens !== null && (maxOutputTokens < 1 || maxOutputTokens > contextWindow)) {
      problem(entry, 'the output limit must be from 1 to the window');
    } else if (limits.has(key)) {
      problem(entry, `${key} is given twice`);
    } else limits.set(key, { contextWindow, maxOutputTokens });
  }
  return limits;
});

/** ALLOW_PRIVATE_TARGETS: comma-separated hosts, addresses, CIDR ranges or `*`, each checked. */
const allowList = z.string().transform((v, ctx) => {
  const parsed = parseAllowList(v);
  if ('entries' in parsed) return parsed.entries;
  for (const message of parsed.problems) ctx.addIssue({ code: 'custom', message });
  return z.NEVER;
});

/** EVENT_REPLAY_MEMORY_EVENTS unless EVENT_REPLAY_LIMIT is more: ~10-20 MiB of events (0.5-1 KiB each in the bench). */
const DEFAULT_REPLAY_MEMORY_EVENTS = 20_000;

export const envSchema = z.object({
  NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: port.default(3000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Unset: the embedded PGlite database under CANOPY_DATA_DIR. */
  DATABASE_URL: z
    .url({ protocol: /^postgres(ql)?$/, error: 'must be a postgres:// or postgresql:// URL' })
    .optional(),
  DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(200).optional(),
  /** Interactive transactions: longest wait for a connection, and longest life. */
  DATABASE_TX_MAX_WAIT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  DATABASE_TX_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  /**
   * How often table statistics are checked (ANALYZE when stale; embedded: VACUUM too), every second during a
   * process's first minute (tables growing from empty); 0 turns it off.
   */
  DATABASE_UPKEEP_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000).default(5_000),
  /**
   * Embedded database: when its thread has not answered a probe (`SELECT 1`, every second) for this long, it is
   * declared unresponsive and restarted on the same data directory. Longer than the longest statement or
   * transaction it runs (while one runs, the probe waits); unset: DATABASE_TX_TIMEOUT_MS plus 5 s.
   */
  DATABASE_EMBEDDED_LIVENESS_MS: z.coerce.number().int().min(1_000).max(600_000).optional(),
  /**
   * Embedded database: when it is not serving again this long after it died or stopped answering, /healthz
   * answers 503 so that whatever supervises the process restarts it (the restarts go on meanwhile).
   */
  DATABASE_EMBEDDED_RECOVERY_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  CANOPY_DATA_DIR: z.string().min(1).default('.canopy'),
  CANOPY_MIGRATIONS_DIR: z.string().min(1).default('prisma/migrations'),
  CANOPY_MIGRATE_ON_BOOT: bool.default(true),
  /** Unset: the in-process bus, registry and queue (embedded runtime). Set: a Redis 7.0 or later. */
  REDIS_URL: z.url({ protocol: /^rediss?$/, error: 'must be a redis:// or rediss:// URL' }).optional(),
  /**
   * A Redis Cluster: `host:port` of some of its nodes, comma-separated (the client discovers the rest); REDIS_URL
   * still selects the distributed runtime and gives the credentials and TLS. Unset: REDIS_URL is one server.
   */
  REDIS_CLUSTER_NODES: z
    .string()
    .regex(/^[^\s,:]+:\d{1,5}(,[^\s,:]+:\d{1,5})*$/, 'must be host:port[,host:port...]')
    .optional(),
  /** Prefix of every Redis key and channel of this deployment (several deployments can share one Redis). */
  CANOPY_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_:.-]{1,64}$/, 'letters, digits and _ : . - only')
    .default('canopy'),
  /**
   * A Redis command with no answer within this fails (in flight or queued while Redis is away), so a request
   * answers 503 and a run's Redis work ends instead of hanging. BullMQ's connections resend instead.
   */
  REDIS_COMMAND_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(2_000),
  /** A worker that stops renewing a run's lock for this long is presumed dead; another worker takes the run. */
  RUN_LOCK_DURATION_MS: z.coerce.number().int().min(500).max(600_000).default(15_000),
  /** Runs one worker process executes at once. */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(10_000).default(50),
  /**
   * How long a session's replay log (which holds its sequence) lives after its last event: in Redis, or in the
   * embedded runtime's memory.
   */
  EVENT_REPLAY_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 86_400)
    .default(86_400),
  CANOPY_ADMIN_KEY: z.string().min(24, 'must be at least 24 characters').optional(),
  CANOPY_INSTANCE_ID: z
    .string()
    .regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'letters, digits and _ . : - only')
    .optional(),
  HTTP_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'a size such as 512kb or 1mb')
    .default('1mb'),
  /** Largest body of an import (POST /v1/sessions/import, and each line of POST /v1/import). */
  IMPORT_BODY_LIMIT: z
    .string()
    .regex(/^\d+(b|kb|mb)$/i, 'a size such as 512kb or 20mb')
    .default('20mb'),
  /** Heavy operations (imports, bulk exports and deletes, forks) one tenant may have in flight across the deployment; more answer 429 too_many_operations. */
  HEAVY_OPERATIONS_PER_TENANT: z.coerce.number().int().min(1).max(1_000).default(4),
  /**
   * Nodes an import writes per statement: a larger import is written in batches (one statement each) into a session
   * hidden until complete (default: 100 on the embedded database, where a batch is a moment nothing else runs; 500
   * on Postgres).
   */
  IMPORT_BATCH_NODES: z.coerce.number().int().min(10).max(100_000).optional(),
  /**
   * After each batch, an import waits this many times as long as the batch took, leaving the database to other
   * tenants (default: 2 on the embedded database, which runs one statement at a time; 1 on Postgres).
   */
  IMPORT_BATCH_PAUSE_RATIO: z.coerce.number().min(0).max(100).optional(),
  /** How often the retention sweeper runs (deletes sessions older than their tenant's policy). */
  RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).max(86_400_000).default(3_600_000),
  /** Sessions one sweep statement deletes (it repeats until a tenant has none left to expire). */
  RETENTION_SWEEP_BATCH: z.coerce.number().int().min(1).max(10_000).default(500),
  /** The worker touches this file after every successful heartbeat (container health checks read it). */
  CANOPY_WORKER_HEARTBEAT_FILE: z.string().min(1).optional(),
  /** Model providers. Base URLs default to the providers' own; keys are required only to use a provider. */
  ANTHROPIC_API_KEY: z.string().min(1).optional(),
  ANTHROPIC_BASE_URL: z.url().optional(),
  OPENAI_API_KEY: z.string().min(1).optional(),
  OPENAI_BASE_URL: z.url().optional(),
  /** `openai-compatible:<model>` talks to this server (vLLM, Ollama, LM Studio, ...). */
  OPENAI_COMPATIBLE_BASE_URL: z.url().optional(),
  OPENAI_COMPATIBLE_API_KEY: z.string().min(1).optional(),
  /**
   * The models GET /v1/models lists for each configured provider (comma-separated names, without the provider
   * prefix). Any other model of a configured provider still works when named; these are what pickers offer.
   */
  ANTHROPIC_MODELS: modelList.default(['claude-sonnet-4-5', 'claude-haiku-4-5', 'claude-opus-4-1']),
  OPENAI_MODELS: modelList.default(['gpt-4.1', 'gpt-4.1-mini', 'gpt-4o-mini', 'o4-mini']),
  /** What the OpenAI-compatible server hosts (nothing is assumed: e.g. "llama3.1:8b,qwen2.5:7b"). */
  OPENAI_COMPATIBLE_MODELS: modelList.default([]),
  /**
   * Context windows and output limits (in tokens) of models the built-in table does not know, or corrections to it,
   * comma-separated: `provider:name=window` or `provider:name=window/maxOutput`, e.g.
   * `openai-compatible:llama3.1:8b=131072/4096`. An entry wins over the built-in table; a model in neither has an
   * unknown window (its context is sent whole).
   */
  MODEL_LIMITS: modelLimits.optional(),
  /**
   * The model of a session a frontend protocol creates on first use (POST /v1/ui/chat, POST /v1/ag-ui) when its
   * request names none, e.g. `openai:gpt-4.1-mini`. Unset: such a request must name its model.
   */
  DEFAULT_MODEL: z
    .string()
    .regex(/^[a-z][a-z0-9-]*:.+$/, 'a model id such as openai:gpt-4.1-mini')
    .max(200)
    .optional(),
  /**
   * The built-in demo server tools (clock, calculator, deploy: approval and progress) for every tenant.
   * Default: on for the single-process runtime (no REDIS_URL), off for a distributed deployment.
   */
  CANOPY_DEMO_TOOLS: bool.optional(),
  /** Sessions with no controller and no run shut down (stop being live) after this; per-session override. */
  SESSION_IDLE_SHUTDOWN_MS: z.coerce.number().int().min(0).max(86_400_000).default(300_000),
  RUN_DECISION_TIMEOUT_MS: z.coerce.number().int().min(1_000).max(604_800_000).default(300_000),
  /**
   * How long a live session keeps a finished run's result for a `wait: true` command (it waits right after starting
   * its run, so seconds are plenty): what a process holds of finished runs is the last this long.
   */
  RUN_RESULT_TTL_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /**
   * A live session keeps in memory, and sends in its snapshots, the active path's last this many nodes (with the
   * versions of their turns and the run in flight); earlier turns are read through the tree and turns routes.
   */
  LIVE_PATH_NODES: z.coerce.number().int().min(10).max(100_000).default(20),
  /** Events kept per session for resume (`after`). */
  EVENT_REPLAY_LIMIT: z.coerce.number().int().min(10).max(100_000).default(1_000),
  /**
   * The embedded runtime keeps the replay logs in its memory: at most this many events across all sessions (the
   * least recently active sessions' oldest events go first). At least EVENT_REPLAY_LIMIT; default 20,000 or
   * EVENT_REPLAY_LIMIT if that is more.
   */
  EVENT_REPLAY_MEMORY_EVENTS: z.coerce.number().int().min(10).max(10_000_000).optional(),
  /**
   * At most one text delta publish per content block in this window: a delta goes out at once when none did
   * within it, later ones wait for its end, merged.
   */
  EVENT_COALESCE_MS: z.coerce.number().int().min(0).max(1_000).default(15),
  /** Default per-call timeout of server tools. */
  TOOL_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000),
  /**
   * How long connecting to a tenant's MCP server and listing its tools may take when a run starts (past it, the run
   * offers the tools the server listed when last reached).
   */
  MCP_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(5_000),
  /** A pooled MCP client (per process, tenant, server and credential) is closed after this long unused. */
  MCP_IDLE_CLOSE_MS: z.coerce.number().int().min(1_000).max(86_400_000).default(120_000),
  /** Default cap on model calls in one run (a request's maxSteps may lower it). */
  RUN_MAX_STEPS: z.coerce.number().int().min(1).max(1_000).default(25),
  /** Signs end-user tokens (HS256). Unset: embedded runs keep a generated one in the data directory. */
  CANOPY_JWT_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  TOKEN_DEFAULT_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(3_600),
  TOKEN_MAX_TTL_SECONDS: z.coerce.number().int().min(10).max(604_800).default(86_400),
  /** Requests per minute per credential (API key or user token) and per tenant; 0 disables. */
  RATE_LIMIT_PER_KEY: z.coerce.number().int().min(0).max(1_000_000).default(1_200),
  RATE_LIMIT_PER_TENANT: z.coerce.number().int().min(0).max(10_000_000).default(6_000),
  /** Reads of shared links (GET /v1/shared/:token, no credential) per minute per client address; 0 disables. */
  RATE_LIMIT_SHARED_PER_ADDRESS: z.coerce.number().int().min(0).max(1_000_000).default(60),
  /**
   * Runs in flight per tenant (busy sessions) before prompts answer rate_limited. Counted in Postgres when a run
   * starts; a process that counted the tenant below half the limit skips the count for up to 1 s, so several api
   * processes may together pass it by the runs they start in that second.
   */
  MAX_CONCURRENT_RUNS_PER_TENANT: z.coerce.number().int().min(1).max(100_000).default(100),
  /**
   * Bytes an SSE stream or WebSocket may have waiting for a client that does not read before it is cut off
   * (reason slow_consumer; the client resumes with `after`).
   */
  LIVE_CLIENT_BUFFER_MAX_BYTES: z.coerce.number().int().min(16_384).max(1_073_741_824).default(1_048_576),
  /** Session subscriptions one WebSocket connection may hold. */
  WS_MAX_SUBSCRIPTIONS: z.coerce.number().int().min(1).max(10_000).default(100),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().min(0).max(600_000).default(10_000),
  /** The largest file an upload may be (POST /v1/files): refused with 413 payload_too_large as it streams past it. */
  FILES_MAX_BYTES: z.coerce.number().int().min(1).max(5_368_709_120).default(26_214_400),
  /**
   * Where files' bytes are kept: `postgres` (chunked rows in the database; works on both runtimes) or `s3` (an
   * S3-compatible object store, for distributed deployments: FILES_S3_BUCKET and the rest).
   */
  FILES_STORAGE: z.enum(['postgres', 's3']).default('postgres'),
  /** The S3-compatible endpoint (MinIO, R2, GCS interoperability: `https://…`). Unset: AWS S3 in FILES_S3_REGION. */
  FILES_S3_ENDPOINT: z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' }).optional(),
  FILES_S3_REGION: z.string().min(1).max(64).default('us-east-1'),
  /** The bucket (it must exist); required when FILES_STORAGE=s3. */
  FILES_S3_BUCKET: z.string().min(3).max(63).optional(),
  /** Unset (both): the AWS SDK's default credential chain (environment, instance or task role). */
  FILES_S3_ACCESS_KEY_ID: z.string().min(1).optional(),
  FILES_S3_SECRET_ACCESS_KEY: z.string().min(1).optional(),
  /** Prepended to every object key (objects are `<prefix><tenant id>/<file key>`). */
  FILES_S3_PREFIX: z.string().max(200).default(''),
  /** Path-style requests (`endpoint/bucket/key`), as MinIO and most S3-compatible servers want. */
  FILES_S3_FORCE_PATH_STYLE: bool.default(true),
  /** A text attachment (plain, Markdown, JSON, CSV, code) is sent to the model as text up to this many bytes. */
  FILES_INLINE_TEXT_MAX_BYTES: z.coerce.number().int().min(0).max(10_485_760).default(262_144),
  /** How long a signed file URL (for a browser's <img>) stays valid. */
  FILES_SIGNED_URL_TTL_SECONDS: z.coerce.number().int().min(10).max(86_400).default(300),
  /**
   * How often each process removes the files no session refers to any more (deleted by their owner, or whose last
   * session was deleted or expired, or stored from a prompt's inline data that no message came to refer to within an
   * hour); 0 turns it off.
   */
  FILES_SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).max(86_400_000).default(60_000),
  /**
   * The loopback, private, link-local or reserved targets that URLs given by tenants (webhook URLs, their own
   * provider base URLs, attachment URLs, MCP server URLs) may reach, comma-separated: host names (whatever they resolve to),
   * addresses, CIDR ranges (`10.0.0.0/8`, `fd00::/8`), or `*` for all. Unset: public addresses only.
   */
  ALLOW_PRIVATE_TARGETS: allowList.optional(),
  /** Let webhook URLs reach every address, as ALLOW_PRIVATE_TARGETS=* does for them alone (local receivers, tests). */
  WEBHOOK_ALLOW_PRIVATE: bool.default(false),
  /** One delivery attempt's timeout (connect to response). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  /** First retry delay; each next one doubles (capped at an hour), with jitter. */
  WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(5_000),
  /** How long a delivery is retried, and how long an endpoint may fail before it is disabled. */
  WEBHOOK_RETRY_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(7 * 86_400_000)
    .default(86_400_000),
  /** How often senders look for due deliveries. */
  WEBHOOK_POLL_MS: z.coerce.number().int().min(10).max(60_000).default(1_000),
  /**
   * Delivery attempts one sender process (the embedded api, each worker) has in flight at most; it leases more as
   * they end, never waiting for the slowest. A hanging attempt costs a socket and about 30 KB, no CPU.
   */
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().min(1).max(1_000).default(256),
  /**
   * Delivery attempts one endpoint has in flight at most, across the deployment: a slow or hanging endpoint
   * holds only these, and its other deliveries wait their turn.
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: z.coerce.number().int().min(1).max(100).default(4),
  /**
   * Delivery attempts one tenant's endpoints have in flight at most, all together, across the deployment: a tenant
   * with many slow or hanging endpoints holds only these, and its other deliveries wait their turn.
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_TENANT: z.coerce.number().int().min(1).max(1_000).default(16),
  /**
   * The deployment key of per-tenant provider keys (AES-256-GCM): 32 bytes as base64 or 64 hex digits. Unset:
   * embedded runs keep a generated one in the data directory; a distributed deployment must set it (same on
   * every process) to store provider keys.
   */
  CANOPY_ENCRYPTION_KEY: z
    .string()
    .regex(/^(?:[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{43}=?)$/, 'must be 32 bytes: 64 hex digits or base64')
    .optional(),
  // OpenTelemetry, by the specification's own variable names (docs/observability.md). Nothing is started, and
  // nothing costs, until an exporter is configured: an OTLP endpoint, or OTEL_TRACES_EXPORTER/OTEL_METRICS_EXPORTER.
  /** Turns OpenTelemetry off whatever else is set. */
  OTEL_SDK_DISABLED: bool.default(false),
  /** The service name on every span and metric (default: canopy-api, canopy-worker). */
  OTEL_SERVICE_NAME: z.string().max(200).optional(),
  /** The OTLP/HTTP collector, e.g. http://collector:4318 (traces go to /v1/traces, metrics to /v1/metrics). */
  OTEL_EXPORTER_OTLP_ENDPOINT: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .optional(),
  /** Where traces go, as a full URL (over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .optional(),
  /** Where metrics go, as a full URL (over OTEL_EXPORTER_OTLP_ENDPOINT). */
  OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .optional(),
  /** OTLP over HTTP as protobuf or JSON (gRPC is not offered). */
  OTEL_EXPORTER_OTLP_PROTOCOL: z
    .enum(['http/protobuf', 'http/json'], { error: 'must be http/protobuf or http/json' })
    .default('http/protobuf'),
  /** Headers of every OTLP request (`key=value,key2=value2`, e.g. an API key of the backend); read by the exporters. */
  OTEL_EXPORTER_OTLP_HEADERS: z
    .string()
    .regex(/^[^=,\s]+=[^,]*(,[^=,\s]+=[^,]*)*$/, 'must be key=value[,key=value...]')
    .optional(),
  /** `otlp` (default once an endpoint is set), `console` (spans printed, for a look), `none`. */
  OTEL_TRACES_EXPORTER: z.enum(['otlp', 'console', 'none']).optional(),
  /** `otlp` (default once an endpoint is set), `console`, `none`. */
  OTEL_METRICS_EXPORTER: z.enum(['otlp', 'console', 'none']).optional(),
  /** How often metrics are exported (milliseconds). */
  OTEL_METRIC_EXPORT_INTERVAL: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
  /** Which traces are kept: the specification's samplers. */
  OTEL_TRACES_SAMPLER: z
    .enum([
      'always_on',
      'always_off',
      'traceidratio',
      'parentbased_always_on',
      'parentbased_always_off',
      'parentbased_traceidratio',
    ])
    .default('parentbased_always_on'),
  /** The ratio of the `traceidratio` samplers, from 0 to 1 (default 1). */
  OTEL_TRACES_SAMPLER_ARG: z.coerce.number().min(0).max(1).optional(),
  /**
   * Which semantic conventions the HTTP and database instrumentations speak (`http`, `http/dup`, `database`,
   * `database/dup`, comma-separated; read by the instrumentations).
   */
  OTEL_SEMCONV_STABILITY_OPT_IN: z
    .string()
    .regex(/^[a-z_/]+(,\s*[a-z_/]+)*$/, 'comma-separated names such as http,database')
    .optional(),
  /** Puts the messages sent to the model and its replies on the spans (gen_ai.input.messages ...): opt in only. */
  OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: bool.default(false),
  /** The tenant id as an attribute of Canopy's OTLP metrics (one series per tenant: mind the backend's cardinality). */
  CANOPY_OTEL_METRICS_TENANT: bool.default(false),
  /**
   * The end user's id (enduser.id) on a run's span when a user token started it and its tenant allows it (PUT
   * /v1/settings telemetryUserId: personal data, opted into by both).
   */
  CANOPY_OTEL_USER_ID: bool.default(false),
});

export type Env = z.infer<typeof envSchema>;

export interface CanopyConfig {
  readonly env: Env['NODE_ENV'];
  readonly instanceId: string;
  readonly http: {
    readonly host: string;
    readonly port: number;
    readonly bodyLimit: string;
    readonly importBodyLimit: string;
  };
  readonly imports: {
    readonly heavyOperationsPerTenant: number;
    readonly batchNodes: number;
    readonly batchPauseRatio: number;
  };
  readonly log: { readonly level: Env['LOG_LEVEL'] };
  readonly database: {
    /** null: embedded PGlite in `dataDir`. */
    readonly url: string | null;
    readonly poolMax: number;
    readonly txMaxWaitMs: number;
    readonly txTimeoutMs: number;
    /** 0: no table upkeep by the service. */
    readonly upkeepIntervalMs: number;
    /** Embedded: silence after which the database thread is restarted. */
    readonly embeddedLivenessMs: number;
    /** Embedded: down this long, the process is unhealthy. */
    readonly embeddedRecoveryMs: number;
    readonly dataDir: string;
    readonly migrationsDir: string;
    readonly migrateOnBoot: boolean;
  };
  readonly redis: {
    readonly url: string | null;
    /** Seed nodes of a Redis Cluster; null: one server. */
    readonly clusterNodes: string[] | null;
    readonly prefix: string;
    readonly workerConcurrency: number;
    readonly replayTtlSeconds: number;
    readonly runLockMs: number;
    readonly commandTimeoutMs: number;
  };
  readonly adminKey: string | null;
  readonly shutdownGraceMs: number;
  readonly worker: { readonly heartbeatFile: string | null };
  readonly providers: {
    readonly anthropic: { readonly apiKey: string | null; readonly baseUrl: string | null };
    readonly openai: { readonly apiKey: string | null; readonly baseUrl: string | null };
    readonly openaiCompatible: { readonly apiKey: string | null; readonly baseUrl: string | null };
  };
  /** The models each provider lists in GET /v1/models (when the provider is configured). */
  readonly models: {
    readonly anthropic: readonly string[];
    readonly openai: readonly string[];
    readonly openaiCompatible: readonly string[];
  };
  /** MODEL_LIMITS by "provider:name" (empty when unset); they win over the built-in table of model limits. */
  readonly modelLimits: ReadonlyMap<string, ConfiguredModelLimits>;
  /** DEFAULT_MODEL: the model of a session a frontend protocol creates without naming one; null when unset. */
  readonly defaultModel: string | null;
  /** Register the built-in demo server tools (clock, calculator, deploy). */
  readonly demoTools: boolean;
  readonly auth: {
    readonly jwtSecret: string | null;
    readonly tokenDefaultTtlSeconds: number;
    readonly tokenMaxTtlSeconds: number;
  };
  readonly limits: {
    readonly perKeyPerMinute: number;
    readonly perTenantPerMinute: number;
    /** Reads of shared links per minute per client address (0: unlimited). */
    readonly sharedPerAddressPerMinute: number;
    readonly concurrentRunsPerTenant: number;
    readonly wsSubscriptions: number;
    readonly liveClientBufferBytes: number;
  };
  readonly sessions: {
    readonly idleShutdownMs: number;
    readonly decisionTimeoutMs: number;
    readonly resultTtlMs: number;
    /** The active path's last nodes a live session keeps (LIVE_PATH_NODES). */
    readonly livePathNodes: number;
    readonly replayLimit: number;
    /** The embedded runtime's replay logs: events kept in memory across all sessions. */
    readonly replayMemoryEvents: number;
    readonly coalesceMs: number;
    readonly toolTimeoutMs: number;
    readonly maxSteps: number;
    readonly retentionSweepMs: number;
    readonly retentionSweepBatch: number;
  };
  /**
   * Where URLs given by tenants may lead (built once from ALLOW_PRIVATE_TARGETS): `tenantUrls` for provider base
   * URLs, attachment URLs and MCP server URLs, `webhooks` for webhook URLs (everything when WEBHOOK_ALLOW_PRIVATE).
   */
  readonly targets: { readonly tenantUrls: TargetPolicy; readonly webhooks: TargetPolicy };
  /** Tenants' MCP servers: connect-and-list timeout at a run's start, idle close of pooled clients. */
  readonly mcp: { readonly connectTimeoutMs: number; readonly idleCloseMs: number };
  /** Files (attachments stored apart from the messages that refer to them). */
  readonly files: {
    readonly maxBytes: number;
    readonly storage: 'postgres' | 's3';
    readonly s3: {
      readonly endpoint: string | null;
      readonly region: string;
      readonly bucket: string | null;
      readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string } | null;
      readonly prefix: string;
      readonly forcePathStyle: boolean;
    };
    readonly inlineTextMaxBytes: number;
    readonly signedUrlTtlSeconds: number;
    readonly sweepIntervalMs: number;
  };
  readonly webhooks: {
    readonly timeoutMs: number;
    readonly retryBaseMs: number;
    readonly retryWindowMs: number;
    readonly pollMs: number;
    readonly maxInFlight: number;
    readonly maxInFlightPerEndpoint: number;
    readonly maxInFlightPerTenant: number;
  };
  /** CANOPY_ENCRYPTION_KEY as given (null: generated into the data directory, embedded only). */
  readonly encryptionKey: string | null;
  /** OpenTelemetry (OTEL_* variables); `traces` and `metrics` null when not exported. */
  readonly telemetry: TelemetryConfig;
}

/** What OpenTelemetry exports, and how (TelemetryConfig.traces null: no tracing; metrics null: no OTLP metrics). */
export interface TelemetryConfig {
  readonly serviceName: string | null;
  readonly protocol: 'http/protobuf' | 'http/json';
  readonly traces: {
    readonly exporter: 'otlp' | 'console';
    /** The traces URL (…/v1/traces). */
    readonly url: string;
    readonly sampler: Env['OTEL_TRACES_SAMPLER'];
    readonly samplerRatio: number;
  } | null;
  readonly metrics: {
    readonly exporter: 'otlp' | 'console';
    /** The metrics URL (…/v1/metrics). */
    readonly url: string;
    readonly intervalMs: number;
  } | null;
  readonly semconvStabilityOptIn: string | null;
  readonly captureMessageContent: boolean;
  readonly metricsTenant: boolean;
  readonly userId: boolean;
}

/** The configuration is invalid; the message names every offending variable. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export interface LoadConfigOptions {
  /** Default for CANOPY_INSTANCE_ID (main.ts passes hostname and pid). */
  defaultInstanceId?: string;
}

/**
 * Parses an environment into CanopyConfig. Empty values count as unset (as `FOO=` in a compose file means).
 * Throws ConfigError naming each bad variable; values are never echoed, since some are secrets.
 */
export function loadConfig(
  source: Record<string, string | undefined>,
  options: LoadConfigOptions = {},
): CanopyConfig {
  const input: Record<string, string> = {};
  for (const key of Object.keys(envSchema.shape)) {
    const value = source[key];
    if (value !== undefined && value.trim() !== '') input[key] = value.trim();
  }
  const parsed = envSchema.safeParse(input);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${String(i.path[0] ?? '(root)')}: ${i.message}`));
  }
  const e = parsed.data;
  const tenantUrls = TargetPolicy.allowing(e.ALLOW_PRIVATE_TARGETS ?? []);
  // Seed nodes alone would leave the service on the embedded runtime without a word: REDIS_URL selects Redis.
  if (e.EVENT_REPLAY_MEMORY_EVENTS !== undefined && e.EVENT_REPLAY_MEMORY_EVENTS < e.EVENT_REPLAY_LIMIT) {
    throw new ConfigError([
      `EVENT_REPLAY_MEMORY_EVENTS: must be at least EVENT_REPLAY_LIMIT (${e.EVENT_REPLAY_LIMIT}): it holds every session's log`,
    ]);
  }
  if (e.FILES_STORAGE === 's3' && !e.FILES_S3_BUCKET) {
    throw new ConfigError(['FILES_S3_BUCKET: required when FILES_STORAGE=s3']);
  }
  if ((e.FILES_S3_ACCESS_KEY_ID === undefined) !== (e.FILES_S3_SECRET_ACCESS_KEY === undefined)) {
    throw new ConfigError(['FILES_S3_ACCESS_KEY_ID, FILES_S3_SECRET_ACCESS_KEY: give both or neither']);
  }
  if (e.REDIS_CLUSTER_NODES && !e.REDIS_URL) {
    throw new ConfigError([
      'REDIS_CLUSTER_NODES: needs REDIS_URL too (it selects the distributed runtime and gives credentials and TLS)',
    ]);
  }
  return {
    env: e.NODE_ENV,
    instanceId: e.CANOPY_INSTANCE_ID ?? options.defaultInstanceId ?? 'canopy',
    http: { host: e.HOST, port: e.PORT, bodyLimit: e.HTTP_BODY_LIMIT, importBodyLimit: e.IMPORT_BODY_LIMIT },
    log: { level: e.LOG_LEVEL },
    imports: {
      heavyOperationsPerTenant: e.HEAVY_OPERATIONS_PER_TENANT,
      batchNodes: e.IMPORT_BATCH_NODES ?? (e.DATABASE_URL ? 500 : 100),
      batchPauseRatio: e.IMPORT_BATCH_PAUSE_RATIO ?? (e.DATABASE_URL ? 1 : 2),
    },
    database: {
      url: e.DATABASE_URL ?? null,
      poolMax: e.DATABASE_POOL_MAX ?? defaultPoolMax(),
      txMaxWaitMs: e.DATABASE_TX_MAX_WAIT_MS,
      txTimeoutMs: e.DATABASE_TX_TIMEOUT_MS,
      upkeepIntervalMs: e.DATABASE_UPKEEP_INTERVAL_MS,
      embeddedLivenessMs: e.DATABASE_EMBEDDED_LIVENESS_MS ?? e.DATABASE_TX_TIMEOUT_MS + 5_000,
      embeddedRecoveryMs: e.DATABASE_EMBEDDED_RECOVERY_MS,
      dataDir: e.CANOPY_DATA_DIR,
      migrationsDir: e.CANOPY_MIGRATIONS_DIR,
      migrateOnBoot: e.CANOPY_MIGRATE_ON_BOOT,
    },
    redis: {
      url: e.REDIS_URL ?? null,
      clusterNodes: e.REDIS_CLUSTER_NODES?.split(',') ?? null,
      prefix: e.CANOPY_REDIS_PREFIX,
      workerConcurrency: e.WORKER_CONCURRENCY,
      replayTtlSeconds: e.EVENT_REPLAY_TTL_SECONDS,
      runLockMs: e.RUN_LOCK_DURATION_MS,
      commandTimeoutMs: e.REDIS_COMMAND_TIMEOUT_MS,
    },
    adminKey: e.CANOPY_ADMIN_KEY ?? null,
    shutdownGraceMs: e.SHUTDOWN_GRACE_MS,
    worker: { heartbeatFile: e.CANOPY_WORKER_HEARTBEAT_FILE ?? null },
    providers: {
      anthropic: { apiKey: e.ANTHROPIC_API_KEY ?? null, baseUrl: e.ANTHROPIC_BASE_URL ?? null },
      openai: { apiKey: e.OPENAI_API_KEY ?? null, baseUrl: e.OPENAI_BASE_URL ?? null },
      openaiCompatible: {
        apiKey: e.OPENAI_COMPATIBLE_API_KEY ?? null,
        baseUrl: e.OPENAI_COMPATIBLE_BASE_URL ?? null,
      },
    },
    models: {
      anthropic: e.ANTHROPIC_MODELS,
      openai: e.OPENAI_MODELS,
      openaiCompatible: e.OPENAI_COMPATIBLE_MODELS,
    },
    modelLimits: e.MODEL_LIMITS ?? new Map(),
    defaultModel: e.DEFAULT_MODEL ?? null,
    demoTools: e.CANOPY_DEMO_TOOLS ?? e.REDIS_URL === undefined,
    auth: {
      jwtSecret: e.CANOPY_JWT_SECRET ?? null,
      tokenDefaultTtlSeconds: e.TOKEN_DEFAULT_TTL_SECONDS,
      tokenMaxTtlSeconds: e.TOKEN_MAX_TTL_SECONDS,
    },
    limits: {
      perKeyPerMinute: e.RATE_LIMIT_PER_KEY,
      perTenantPerMinute: e.RATE_LIMIT_PER_TENANT,
      sharedPerAddressPerMinute: e.RATE_LIMIT_SHARED_PER_ADDRESS,
      concurrentRunsPerTenant: e.MAX_CONCURRENT_RUNS_PER_TENANT,
      wsSubscriptions: e.WS_MAX_SUBSCRIPTIONS,
      liveClientBufferBytes: e.LIVE_CLIENT_BUFFER_MAX_BYTES,
    },
    sessions: {
      idleShutdownMs: e.SESSION_IDLE_SHUTDOWN_MS,
      decisionTimeoutMs: e.RUN_DECISION_TIMEOUT_MS,
      resultTtlMs: e.RUN_RESULT_TTL_MS,
      livePathNodes: e.LIVE_PATH_NODES,
      replayLimit: e.EVENT_REPLAY_LIMIT,
      replayMemoryEvents:
        e.EVENT_REPLAY_MEMORY_EVENTS ?? Math.max(DEFAULT_REPLAY_MEMORY_EVENTS, e.EVENT_REPLAY_LIMIT),
      coalesceMs: e.EVENT_COALESCE_MS,
      toolTimeoutMs: e.TOOL_TIMEOUT_MS,
      maxSteps: e.RUN_MAX_STEPS,
      retentionSweepMs: e.RETENTION_SWEEP_INTERVAL_MS,
      retentionSweepBatch: e.RETENTION_SWEEP_BATCH,
    },
    targets: {
      tenantUrls,
      webhooks: e.WEBHOOK_ALLOW_PRIVATE ? TargetPolicy.anywhere : tenantUrls,
    },
    mcp: { connectTimeoutMs: e.MCP_CONNECT_TIMEOUT_MS, idleCloseMs: e.MCP_IDLE_CLOSE_MS },
    files: {
      maxBytes: e.FILES_MAX_BYTES,
      storage: e.FILES_STORAGE,
      s3: {
        endpoint: e.FILES_S3_ENDPOINT ?? null,
        region: e.FILES_S3_REGION,
        bucket: e.FILES_S3_BUCKET ?? null,
        credentials:
          e.FILES_S3_ACCESS_KEY_ID && e.FILES_S3_SECRET_ACCESS_KEY
            ? { accessKeyId: e.FILES_S3_ACCESS_KEY_ID, secretAccessKey: e.FILES_S3_SECRET_ACCESS_KEY }
            : null,
        prefix: e.FILES_S3_PREFIX,
        forcePathStyle: e.FILES_S3_FORCE_PATH_STYLE,
      },
      inlineTextMaxBytes: e.FILES_INLINE_TEXT_MAX_BYTES,
      signedUrlTtlSeconds: e.FILES_SIGNED_URL_TTL_SECONDS,
      sweepIntervalMs: e.FILES_SWEEP_INTERVAL_MS,
    },
    webhooks: {
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryWindowMs: e.WEBHOOK_RETRY_WINDOW_MS,
      pollMs: e.WEBHOOK_POLL_MS,
      maxInFlight: e.WEBHOOK_MAX_IN_FLIGHT,
      maxInFlightPerEndpoint: e.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT,
      maxInFlightPerTenant: e.WEBHOOK_MAX_IN_FLIGHT_PER_TENANT,
    },
    encryptionKey: e.CANOPY_ENCRYPTION_KEY ?? null,
    telemetry: telemetryConfig(e),
  };
}

/** The OTLP/HTTP default endpoint of the specification. */
const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

/**
 * OpenTelemetry's settings. A signal is exported when its exporter is named (OTEL_TRACES_EXPORTER,
 * OTEL_METRICS_EXPORTER) or, unnamed, when an OTLP endpoint for it is given; `none` or OTEL_SDK_DISABLED turn it off.
 */
function telemetryConfig(e: Env): TelemetryConfig {
  const base = (e.OTEL_EXPORTER_OTLP_ENDPOINT ?? DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '');
  const exporter = (named: 'otlp' | 'console' | 'none' | undefined, endpoint: string | undefined) => {
    if (e.OTEL_SDK_DISABLED || named === 'none') return null;
    return named ?? (endpoint !== undefined || e.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ? 'otlp' : null);
  };
  const traces = exporter(e.OTEL_TRACES_EXPORTER, e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT);
  const metrics = exporter(e.OTEL_METRICS_EXPORTER, e.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT);
  return {
    serviceName: e.OTEL_SERVICE_NAME ?? null,
    protocol: e.OTEL_EXPORTER_OTLP_PROTOCOL,
    traces: traces && {
      exporter: traces,
      url: e.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? `${base}/v1/traces`,
      sampler: e.OTEL_TRACES_SAMPLER,
      samplerRatio: e.OTEL_TRACES_SAMPLER_ARG ?? 1,
    },
    metrics: metrics && {
      exporter: metrics,
      url: e.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT ?? `${base}/v1/metrics`,
      intervalMs: e.OTEL_METRIC_EXPORT_INTERVAL,
    },
    semconvStabilityOptIn: e.OTEL_SEMCONV_STABILITY_OPT_IN ?? null,
    captureMessageContent: e.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
    metricsTenant: e.CANOPY_OTEL_METRICS_TENANT,
    userId: e.CANOPY_OTEL_USER_ID,
  };
}

/**
 * DATABASE_POOL_MAX when unset: two connections per CPU core of this machine, from 4 to 10. A pool larger than the
 * database can run at once does not run more: each statement gets slower (they share its cores) and the queue moves
 * from the pool, where a request's statements go before the runs' (connection-lanes.ts), into Postgres, where they
 * do not. HTTP bench, 100 sessions on 2 cores with Postgres on the same machine: session create p50 15-16 ms with 4
 * connections, 47-55 ms with 10, runs/s alike (198-215 and 183-219), Postgres 63-64% of a core against 78-79%.
 */
export function defaultPoolMax(cores = availableParallelism()): number {
  return Math.min(10, Math.max(4, 2 * cores));
}
