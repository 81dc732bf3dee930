// Operations: /healthz (process up), /readyz (database answers), /metrics (Prometheus).

import { Controller, Get, HttpCode, Inject, Optional, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { CanopyException } from '@canopy/common';
import { Public } from '@canopy/auth';
import { Database } from '@canopy/store';
import type { RedisRealtime } from '@canopy/realtime';
import { REDIS_REALTIME } from '@canopy/session';
import { MetricsService } from './metrics.service';

@ApiTags('operations')
@Public()
@Controller()
export class OpsController {
  constructor(
    private readonly database: Database,
    private readonly metrics: MetricsService,
    @Optional() @Inject(REDIS_REALTIME) private readonly redis: RedisRealtime | null,
  ) {}

  @Get('healthz')
  @HttpCode(200)
  @ApiOperation({ summary: 'The process is up' })
  @ApiOkResponse({ schema: { example: { status: 'ok' } } })
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  @Get('readyz')
  @ApiOperation({ summary: 'The database (and Redis, when configured) answer' })
  @ApiOkResponse({ schema: { example: { status: 'ok', checks: { database: 'ok' } } } })
  @ApiServiceUnavailableResponse({ description: 'a dependency is unreachable (error code `unavailable`)' })
  async readyz(): Promise<{ status: 'ok'; checks: Record<string, 'ok'> }> {
    try {
      await this.database.ping();
    } catch (err) {
      throw new CanopyException(
        'unavailable',
        'the database is unreachable',
        { check: 'database' },
        { cause: err },
      );
    }
    if (!this.redis) return { status: 'ok', checks: { database: 'ok' } };
    try {
      await this.redis.ping();
    } catch (err) {
      throw new CanopyException('unavailable', 'redis is unreachable', { check: 'redis' }, { cause: err });
    }
    return { status: 'ok', checks: { database: 'ok', redis: 'ok' } };
  }

  @Get('metrics')
  @ApiOperation({ summary: 'Prometheus metrics' })
  async metricsText(@Res() res: Response): Promise<void> {
    res.setHeader('content-type', this.metrics.registry.contentType);
    res.send(await this.metrics.registry.metrics());
  }
}
