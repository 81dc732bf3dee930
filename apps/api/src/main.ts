// Entry point of the api deployable: parse the environment once, start OpenTelemetry when OTEL_* configures it,
// then load the application (after the instrumentations are in place: they patch http, express, pg and ioredis as
// those are required), boot, listen.

import { hostname } from 'node:os';
import { bootConfig } from '@canopy/common/telemetry/boot';
import { startFailureText } from '@canopy/common/process';

async function main(): Promise<void> {
  const config = bootConfig(process.env, {
    defaultInstanceId: `${hostname()}:${process.pid}`,
    label: 'canopy',
    serviceName: 'canopy-api',
  });
  const { startApi } = await import('./start-api');
  await startApi(config);
}

main().catch((err: unknown) => {
  process.stderr.write(`canopy: ${startFailureText(err)}\n`);
  process.exit(1);
});
