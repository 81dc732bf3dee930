// Operations: /healthz (process up, and its embedded database not down past its restart bound), /readyz (the
// database and Redis answer), /metrics (Prometheus).

import { Controller, Get, HttpCode, Inject, Optional, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CanopyException } from '@canopy/common';
import { Public } from '@canopy/auth';
import { Database, EMBEDDED_DATABASE_SUPERVISOR, type EmbeddedDatabaseSupervisor } from '@canopy/store';
import { REDIS_CONNECTIONS, type RedisConnections } from '@canopy/redis';
import { MetricsService } from './metrics.service';

/** How long /readyz waits for each dependency (checked side by side: the answer comes within a second). */
const READY_CHECK_MS = 900;

/** True when the promise resolved within ms (false when it failed or took longer). */
async function withinMs(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const ok = await Promise.race([
    promise.then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((r) => (timer = setTimeout(() => r(false), ms))),
  ]);
  clearTimeout(timer);
  return ok;
}

@ApiTags('operations')
@Public()
@Controller()
export class OpsController {
  constructor(
    private readonly database: Database,
    private readonly metrics: MetricsService,
    @Optional() @Inject(REDIS_CONNECTIONS) private readonly redis: RedisConnections | null,
    @Optional()
    @Inject(EMBEDDED_DATABASE_SUPERVISOR)
    private readonly embedded: EmbeddedDatabaseSupervisor | null,
  ) {}

  @Get('healthz')
  @HttpCode(200)
  @ApiOperation({
    summary:
      'The process is up (and its embedded database, when it has one, is not down past DATABASE_EMBEDDED_RECOVERY_MS)',
  })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  @ApiServiceUnavailableResponse({
    description:
      'the embedded database could not be restarted within its bound (error code `unavailable`): restart the process',
  })
  healthz(): { status: 'ok' } {
    // Only what a restart of the process mends fails liveness: a database that is merely restarting fails
    // readiness alone.
    if (this.embedded && !this.embedded.healthy) {
      throw new CanopyException(
        'unavailable',
        'the embedded database could not be restarted; restart the process',
        { checks: { database: this.embedded.state } },
      );
    }
    return { status: 'ok' };
  }

  @Get('readyz')
  @ApiOperation({
    summary: `Each dependency answers (the database, and Redis when configured), each within ${READY_CHECK_MS} ms`,
  })
  @ApiOkResponse({ schema: { example: { status: 'ok', checks: { database: 'ok', redis: 'ok' } } } })
  @ApiServiceUnavailableResponse({
    description:
      'a dependency did not answer in time (error code `unavailable`; `details.checks` says which: ok | unavailable)',
  })
  async readyz(): Promise<{ status: 'ok'; checks: Record<string, 'ok'> }> {
    const probes: Array<[string, () => Promise<unknown>]> = [['database', () => this.database.ping()]];
    const redis = this.redis;
    if (redis) probes.push(['redis', () => redis.ping()]);
    // Checked side by side, each with its own deadline: a dependency that hangs cannot hang the probe.
    const results = await Promise.all(probes.map(([, probe]) => withinMs(probe(), READY_CHECK_MS)));
    const checks = Object.fromEntries(probes.map(([name], i) => [name, results[i] ? 'ok' : 'unavailable']));
    const down = probes.filter((_, i) => !results[i]).map(([name]) => name);
    if (down.length > 0) {
      throw new CanopyException('unavailable', `unavailable: ${down.join(', ')}`, { checks });
    }
    return { status: 'ok', checks: checks as Record<string, 'ok'> };
  }

  @Get('metrics')
  @ApiOperation({ summary: 'Prometheus metrics' })
  async metricsText(@Res() res: Response): Promise<void> {
    res.setHeader('content-type', this.metrics.registry.contentType);
    res.send(await this.metrics.registry.metrics());
  }
}
