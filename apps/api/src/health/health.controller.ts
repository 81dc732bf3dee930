// Liveness and readiness for load balancers and orchestrators.

import { Controller, Get, HttpCode } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import { CanopyException } from '@canopy/common';
import { Database } from '@canopy/store';

@ApiTags('operations')
@Controller()
export class HealthController {
  constructor(private readonly database: Database) {}

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
    return { status: 'ok', checks: { database: 'ok' } };
  }
}
