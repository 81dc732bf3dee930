// User tokens: a tenant mints short-lived tokens for its end users (their browsers then talk to Canopy directly).

import { Body, Controller, Post } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiTags } from '@nestjs/swagger';
import { Access, AuthService, CurrentPrincipal, type Principal } from '@canopy/auth';
import { AuditRepository } from '@canopy/store';
import { CreateTokenDto } from './dto';

@ApiTags('tokens')
@ApiBearerAuth()
@Controller('v1/tokens')
export class TokensController {
  constructor(
    private readonly auth: AuthService,
    private readonly audit: AuditRepository,
  ) {}

  @Post()
  @Access('tenant')
  @ApiOperation({
    summary:
      'Mint a user token (JWT HS256, subject = userId) for one of the tenant’s users; it names the key that minted it (claim kid), and revoking that key ends it',
  })
  async mint(@CurrentPrincipal() principal: Principal, @Body() body: CreateTokenDto) {
    if (principal.kind !== 'tenant') throw new Error('unreachable: guarded by @Access("tenant")');
    const { token, expiresAt } = await this.auth.tokens.mint(
      principal.tenantId,
      body.userId,
      body.ttlSeconds,
      principal.keyId,
    );
    // Issuance writes nothing else: its audit event is its only record (the user and the expiry, never the token).
    await this.audit.record({
      tenantId: principal.tenantId,
      action: 'token.issue',
      targetType: 'user',
      targetId: body.userId,
      after: { expiresAt: expiresAt.toISOString() },
    });
    return { token, expiresAt: expiresAt.toISOString() };
  }
}
