// User tokens: a tenant mints short-lived tokens for its end users (their browsers then talk to Canopy directly).

import { Body, Controller, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access, CurrentPrincipal, TokenIssuanceService, type Principal } from '@canopy/auth';
import { CreateTokenDto } from './dto';

@ApiTags('tokens')
@ApiBearerAuth()
@Controller('v1/tokens')
export class TokensController {
  constructor(private readonly tokens: TokenIssuanceService) {}

  @Post()
  @Access('tenant')
  @ApiOperation({
    summary:
      'Mint a user token (JWT HS256, subject = userId) for one of the tenant’s users; it names the key that minted it (claim kid), and revoking that key ends it',
  })
  async mint(@CurrentPrincipal() principal: Principal, @Body() body: CreateTokenDto) {
    if (principal.kind !== 'tenant') throw new Error('unreachable: guarded by @Access("tenant")');
    const { token, expiresAt } = await this.tokens.issue(principal, body.userId, body.ttlSeconds);
    return { token, expiresAt: expiresAt.toISOString() };
  }
}
