import { TargetPolicy } from '../net/target-policy';
import { ConfigError, defaultPoolMax, loadConfig } from './config.schema';

describe('loadConfig', () => {
  it('runs with no configuration at all: embedded database, in-process runtime, port 3000', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      env: 'development',
      http: { host: '0.0.0.0', port: 3000, bodyLimit: '1mb' },
      log: { level: 'info' },
      database: {
        url: null,
        dataDir: '.canopy',
        migrationsDir: 'prisma/migrations',
        migrateOnBoot: true,
        poolMax: defaultPoolMax(),
      },
      redis: { url: null },
      adminKey: null,
    });
  });

  it('sizes the pool by the machine when DATABASE_POOL_MAX is unset: two per core, from 4 to 10', () => {
    expect([1, 2, 3, 4, 5, 64].map((cores) => defaultPoolMax(cores))).toEqual([4, 4, 6, 8, 10, 10]);
    expect(loadConfig({ DATABASE_POOL_MAX: '3' }).database.poolMax).toBe(3);
  });

  it('restarts an embedded database silent past the transaction deadline plus 5 s, unless told otherwise', () => {
    expect(loadConfig({}).database).toMatchObject({ embeddedLivenessMs: 20_000, embeddedRecoveryMs: 60_000 });
    expect(loadConfig({ DATABASE_TX_TIMEOUT_MS: '4000' }).database.embeddedLivenessMs).toBe(9_000);
    expect(
      loadConfig({ DATABASE_EMBEDDED_LIVENESS_MS: '3000', DATABASE_EMBEDDED_RECOVERY_MS: '8000' }).database,
    ).toMatchObject({ embeddedLivenessMs: 3_000, embeddedRecoveryMs: 8_000 });
    expect(() => loadConfig({ DATABASE_EMBEDDED_LIVENESS_MS: '50' })).toThrow(
      /DATABASE_EMBEDDED_LIVENESS_MS/,
    );
  });

  it('reads and coerces every variable', () => {
    const config = loadConfig({
      NODE_ENV: 'production',
      PORT: '8080',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      DATABASE_URL: 'postgresql://u:p@db:5432/canopy',
      DATABASE_POOL_MAX: '25',
      CANOPY_MIGRATE_ON_BOOT: 'false',
      REDIS_URL: 'redis://cache:6379',
      CANOPY_ADMIN_KEY: 'a'.repeat(32),
      CANOPY_INSTANCE_ID: 'api-1',
      HTTP_BODY_LIMIT: '512kb',
    });
    expect(config).toMatchObject({
      env: 'production',
      instanceId: 'api-1',
      http: { host: '127.0.0.1', port: 8080, bodyLimit: '512kb' },
      log: { level: 'debug' },
      database: { url: 'postgresql://u:p@db:5432/canopy', poolMax: 25, migrateOnBoot: false },
      redis: { url: 'redis://cache:6379' },
      adminKey: 'a'.repeat(32),
    });
  });

  it('treats empty values as unset, as `FOO=` in a compose file means', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '  ' })).toMatchObject({
      http: { port: 3000 },
      database: { url: null },
    });
  });

  it('uses the caller default instance id when none is configured', () => {
    expect(loadConfig({}, { defaultInstanceId: 'host:42' }).instanceId).toBe('host:42');
  });

  it.each([
    ['PORT', '99999'],
    ['PORT', 'eighty'],
    ['DATABASE_URL', 'mysql://db/x'],
    ['REDIS_URL', 'http://cache'],
    ['LOG_LEVEL', 'loud'],
    ['CANOPY_MIGRATE_ON_BOOT', 'maybe'],
    ['CANOPY_ADMIN_KEY', 'short'],
    ['HTTP_BODY_LIMIT', 'lots'],
    ['DATABASE_POOL_MAX', '0'],
    ['OPENAI_MODELS', 'gpt 4'],
    ['CANOPY_DEMO_TOOLS', 'sometimes'],
  ])('stops with a message naming %s when it is %p, without echoing the value', (name, value) => {
    let error: unknown;
    try {
      loadConfig({ [name]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toMatch(new RegExp(`^Invalid configuration:\\n  - ${name}: `));
    expect((error as ConfigError).message).not.toContain(value);
  });

  it('lists every bad variable at once', () => {
    expect(() => loadConfig({ PORT: '-1', LOG_LEVEL: 'loud' })).toThrow(
      /PORT[\s\S]*LOG_LEVEL|LOG_LEVEL[\s\S]*PORT/,
    );
  });

  it('refuses an in-memory replay budget smaller than one session log', () => {
    expect(() => loadConfig({ EVENT_REPLAY_LIMIT: '5000', EVENT_REPLAY_MEMORY_EVENTS: '4999' })).toThrow(
      /EVENT_REPLAY_MEMORY_EVENTS: must be at least EVENT_REPLAY_LIMIT \(5000\)/,
    );
    // Unset, it grows with the per-session limit.
    expect(loadConfig({ EVENT_REPLAY_LIMIT: '50000' }).sessions.replayMemoryEvents).toBe(50_000);
    expect(
      loadConfig({ EVENT_REPLAY_LIMIT: '5000', EVENT_REPLAY_MEMORY_EVENTS: '5000' }).sessions,
    ).toMatchObject({
      replayLimit: 5000,
      replayMemoryEvents: 5000,
    });
    expect(loadConfig({}).sessions.replayMemoryEvents).toBe(20_000);
  });

  it('refuses Redis Cluster seed nodes without REDIS_URL (they would leave it on the embedded runtime)', () => {
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: '127.0.0.1:7000' })).toThrow(
      /REDIS_CLUSTER_NODES: needs REDIS_URL/,
    );
    expect(
      loadConfig({
        REDIS_CLUSTER_NODES: '127.0.0.1:7000,127.0.0.1:7001',
        REDIS_URL: 'redis://127.0.0.1:7000',
      }).redis.clusterNodes,
    ).toEqual(['127.0.0.1:7000', '127.0.0.1:7001']);
  });

  it('ignores variables it does not know', () => {
    expect(() => loadConfig({ PATH: '/usr/bin', HOME: '/root' })).not.toThrow();
  });

  it('reads the model lists (comma-separated, defaults per provider) and the demo tools switch', () => {
    const defaults = loadConfig({});
    expect(defaults.models.openai).toContain('gpt-4.1');
    expect(defaults.models.anthropic).toContain('claude-sonnet-4-5');
    expect(defaults.models.openaiCompatible).toEqual([]);
    expect(defaults.demoTools).toBe(true);
    const set = loadConfig({
      OPENAI_COMPATIBLE_MODELS: ' llama3.1:8b , qwen2.5:7b,',
      REDIS_URL: 'redis://cache',
    });
    expect(set.models.openaiCompatible).toEqual(['llama3.1:8b', 'qwen2.5:7b']);
    // A distributed deployment turns the demo tools on only when asked.
    expect(set.demoTools).toBe(false);
    expect(loadConfig({ REDIS_URL: 'redis://cache', CANOPY_DEMO_TOOLS: 'true' }).demoTools).toBe(true);
    expect(loadConfig({ CANOPY_DEMO_TOOLS: 'off' }).demoTools).toBe(false);
  });

  it('reads MODEL_LIMITS into limits by "provider:name", splitting each entry at its last =', () => {
    expect(loadConfig({}).modelLimits.size).toBe(0);
    const { modelLimits } = loadConfig({
      MODEL_LIMITS:
        ' openai-compatible:llama3.1:8b=131072/4096 , anthropic:claude-next=500000,openai:org/model:v2@x=8192,',
    });
    expect([...modelLimits]).toEqual([
      ['openai-compatible:llama3.1:8b', { contextWindow: 131_072, maxOutputTokens: 4_096 }],
      ['anthropic:claude-next', { contextWindow: 500_000, maxOutputTokens: null }],
      ['openai:org/model:v2@x', { contextWindow: 8_192, maxOutputTokens: null }],
    ]);
  });

  it('refuses every bad MODEL_LIMITS entry at once, naming the variable and the entry', () => {
    const bad = [
      'openai:gpt-4.1', // no window
      'openai:gpt-4.1=', // no window
      'openai:gpt-4.1=big',
      'openai:gpt-4.1=1.5e6',
      'openai:gpt-4.1=128000/', // an empty output limit
      'openai:gpt-4.1=0',
      'openai:gpt-4.1=200000000', // past 100,000,000
      'openai:gpt-4.1=1000/2000', // an output limit past the window
      'llama3.1:8b=131072', // no provider ("llama3.1" is none)
      'mock:echo=1000', // the mocks take opts.contextWindow
      'openai:=1000', // no model name
      '=1000',
      'openai:gpt 4=1000',
      'openai:gpt-4.1=1000=2000', // "gpt-4.1=1000" is no model name
    ];
    for (const entry of bad) {
      const error = (() => {
        try {
          loadConfig({ MODEL_LIMITS: `openai:gpt-4o=128000,${entry}` });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^MODEL_LIMITS: /)]);
      expect((error as ConfigError).problems[0]).toContain(`"${entry}"`);
    }
    const twice = (() => {
      try {
        loadConfig({ MODEL_LIMITS: 'openai:gpt-4o=128000,openai:gpt-4o=64000,openai:x=0' });
      } catch (e) {
        return e;
      }
    })();
    expect((twice as ConfigError).problems).toEqual([
      'MODEL_LIMITS: "openai:gpt-4o=64000": openai:gpt-4o is given twice',
      'MODEL_LIMITS: "openai:x=0": the window must be from 1 to 100000000',
    ]);
  });

  it('builds where tenant URLs may lead from ALLOW_PRIVATE_TARGETS; WEBHOOK_ALLOW_PRIVATE means * for webhooks', () => {
    const defaults = loadConfig({});
    expect(defaults.targets.tenantUrls).toBe(TargetPolicy.publicOnly);
    expect(defaults.targets.webhooks).toBe(TargetPolicy.publicOnly);
    const listed = loadConfig({ ALLOW_PRIVATE_TARGETS: 'llm.internal, 10.0.0.0/8,127.0.0.1' });
    expect(listed.targets.tenantUrls.allowsHost('llm.internal')).toBe(true);
    expect(listed.targets.tenantUrls.allowsAddress('10.2.3.4')).toBe(true);
    expect(listed.targets.tenantUrls.allowsAddress('192.168.0.1')).toBe(false);
    expect(listed.targets.webhooks).toBe(listed.targets.tenantUrls);
    const webhooks = loadConfig({ ALLOW_PRIVATE_TARGETS: '10.0.0.0/8', WEBHOOK_ALLOW_PRIVATE: 'true' });
    expect(webhooks.targets.webhooks.allowsAll).toBe(true);
    expect(webhooks.targets.tenantUrls.allowsAll).toBe(false);
    expect(loadConfig({ ALLOW_PRIVATE_TARGETS: '*' }).targets.tenantUrls.allowsAll).toBe(true);
  });

  it('bounds webhook attempts in flight per process, endpoint and tenant; refuses a bound that is no positive integer', () => {
    expect(loadConfig({}).webhooks).toMatchObject({
      maxInFlight: 256,
      maxInFlightPerEndpoint: 4,
      maxInFlightPerTenant: 16,
    });
    expect(loadConfig({ WEBHOOK_MAX_IN_FLIGHT_PER_TENANT: '40' }).webhooks.maxInFlightPerTenant).toBe(40);
    for (const value of ['0', '1001', '2.5', 'many'])
      expect(() => loadConfig({ WEBHOOK_MAX_IN_FLIGHT_PER_TENANT: value })).toThrow(
        /^Invalid configuration:\n {2}- WEBHOOK_MAX_IN_FLIGHT_PER_TENANT: /,
      );
  });

  it('refuses an ALLOW_PRIVATE_TARGETS entry that is no host, address, CIDR range or *, naming the variable', () => {
    for (const value of ['http://llm.internal', '10.0.0.0/33', 'a b', '0x7f000001']) {
      const error = (() => {
        try {
          loadConfig({ ALLOW_PRIVATE_TARGETS: `localhost,${value}` });
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toEqual([expect.stringMatching(/^ALLOW_PRIVATE_TARGETS: /)]);
      expect((error as ConfigError).problems[0]).toContain(`"${value}"`);
    }
  });
});
