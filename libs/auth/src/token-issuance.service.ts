// Issuing a user token: minted for one of the tenant's users by one of its keys, and recorded in the audit log
// (issuance writes nothing else, so its audit event is its only record: the user and the expiry, never the token).

import { Injectable } from '@nestjs/common';
import { AuditService } from '@canopy/tenancy';
import { AuthService } from './auth.service';

@Injectable()
export class TokenIssuanceService {
  constructor(
    private readonly auth: AuthService,
    private readonly audit: AuditService,
  ) {}

  async issue(
    minter: { tenantId: string; keyId: string },
    userId: string,
    ttlSeconds: number | undefined,
  ): Promise<{ token: string; expiresAt: Date }> {
    const { token, expiresAt } = await this.auth.tokens.mint(
      minter.tenantId,
      userId,
      ttlSeconds,
      minter.keyId,
    );
    await this.audit.record({
      tenantId: minter.tenantId,
      action: 'token.issue',
      targetType: 'user',
      targetId: userId,
      after: { expiresAt: expiresAt.toISOString() },
    });
    return { token, expiresAt };
  }
}
