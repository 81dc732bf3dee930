// Authentication for the api: secrets, user tokens, the global guard, and the lookups of keys and tenants (through
// the tenants feature's repository).

import { Logger, Module } from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { TenancyModule, TenantsRepository } from '@canopy/tenancy';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { describeSecretSources, resolveSecrets } from './secrets';
import { TokenIssuanceService } from './token-issuance.service';
import { UserTokens } from './tokens';

@Module({
  imports: [TenancyModule.forRoot()],
  providers: [
    {
      provide: AuthService,
      inject: [CANOPY_CONFIG, TenantsRepository],
      useFactory: (config: CanopyConfig, tenants: TenantsRepository) => {
        const secrets = resolveSecrets(config);
        // Where the admin key comes from, never the key itself.
        new Logger('Auth').log(describeSecretSources(secrets));
        const tokens = new UserTokens(secrets.jwtSecret, {
          defaultSeconds: config.auth.tokenDefaultTtlSeconds,
          maxSeconds: config.auth.tokenMaxTtlSeconds,
        });
        return new AuthService(secrets.adminKey, tenants, tokens);
      },
    },
    AuthGuard,
    TokenIssuanceService,
  ],
  exports: [AuthService, AuthGuard, TokenIssuanceService],
})
export class AuthModule {}
