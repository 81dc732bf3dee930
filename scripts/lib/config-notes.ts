// What docs/configuration.md adds to a configuration variable's schema comment (libs/common/src/config/
// config.schema.ts), mostly for entries that have none. Prefer a comment on the schema entry; a variable with
// neither is still listed (with its type and default), so a new variable never goes undocumented.

export const CONFIG_NOTES: Readonly<Record<string, string>> = {
  NODE_ENV: 'the environment the service runs in',
  HOST: 'the address the api listens on',
  PORT: 'the port the api listens on',
  LOG_LEVEL: 'pino level; logs are JSON lines carrying `requestId`',
  DATABASE_POOL_MAX:
    "connections per process (the embedded database always uses 1, and the run engine's statements and session creates share it pipelined: up to 5 written before their answers, creates first); unset: twice the machine's CPU cores, from 4 to 10 (a pool larger than the database can run at once only makes each statement slower and moves the queue into Postgres, where creates and reads no longer go first). When all are busy, requests (creates, reads) get the next free one before the run engine's statements, at most 8 in a row while runs wait",
  DATABASE_TX_TIMEOUT_MS: 'the longest life of an interactive transaction',
  CANOPY_DATA_DIR:
    'data directory of the embedded database and its generated secrets (one process at a time)',
  CANOPY_MIGRATIONS_DIR: 'where the SQL migrations are',
  CANOPY_MIGRATE_ON_BOOT: 'apply pending migrations when the api starts',
  CANOPY_ADMIN_KEY:
    'the admin credential; unset: generated and kept in `<data dir>/secrets.json`. Set it when running several api replicas',
  CANOPY_INSTANCE_ID: "this process's name in logs and the live registry (default `host:pid`)",
  HTTP_BODY_LIMIT: 'largest request body (`413 payload_too_large` above it)',
  ANTHROPIC_API_KEY: 'enables `anthropic:<model>`',
  ANTHROPIC_BASE_URL: "the Anthropic API's base URL (includes `/v1`)",
  OPENAI_API_KEY: 'enables `openai:<model>` (Responses API)',
  OPENAI_BASE_URL: "the OpenAI API's base URL",
  OPENAI_COMPATIBLE_API_KEY: 'the key the OpenAI-compatible server wants, if any',
  ANTHROPIC_MODELS: 'the Anthropic models `GET /v1/models` lists when `ANTHROPIC_API_KEY` is set',
  OPENAI_MODELS: 'the OpenAI models `GET /v1/models` lists when `OPENAI_API_KEY` is set',
  RUN_DECISION_TIMEOUT_MS:
    'a paused run’s tool uses still awaiting a decision are rejected (`expired`) after this',
  TOKEN_DEFAULT_TTL_SECONDS: 'lifetime of a user token when `POST /v1/tokens` names none',
  TOKEN_MAX_TTL_SECONDS: 'the longest lifetime `POST /v1/tokens` grants',
  RATE_LIMIT_PER_TENANT:
    'requests per minute per tenant (`0` disables); counted in Redis when `REDIS_URL` is set',
  SHUTDOWN_GRACE_MS:
    'on SIGTERM, how long runs in flight may take to finish; then the embedded api cancels them and a worker hands them back to the queue',
};
