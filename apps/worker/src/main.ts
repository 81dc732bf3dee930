// Entry point of the worker deployable (distributed mode only: the embedded runtime runs turns in the api). The
// environment is parsed first and OpenTelemetry started when OTEL_* configures it, before the application's modules
// load (the instrumentations patch pg and ioredis as they are required).

import { hostname } from 'node:os';
import { bootConfig } from '@canopy/common/telemetry/boot';
import { startFailureText } from '@canopy/common/process';

async function main(): Promise<void> {
  const config = bootConfig(process.env, {
    defaultInstanceId: `${hostname()}:${process.pid}:worker`,
    label: 'canopy worker',
    serviceName: 'canopy-worker',
  });
  if (!config.database.url || !config.redis.url) {
    process.stderr.write(
      'canopy worker: DATABASE_URL and REDIS_URL are required; the worker serves the distributed runtime (the embedded one runs turns inside the api)\n',
    );
    process.exit(1);
  }
  const { startWorker } = await import('./start-worker');
  await startWorker(config);
}

main().catch((err: unknown) => {
  process.stderr.write(`canopy worker: ${startFailureText(err)}\n`);
  process.exit(1);
});
