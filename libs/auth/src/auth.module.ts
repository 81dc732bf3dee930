// Authentication for the api: secrets, tenants and keys, user tokens, and the global guard.

import { Global, Logger, Module } from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { resolveSecrets } from './secrets';
import { TenantsRepository } from './tenants.repository';
import { UserTokens } from './tokens';

@Global()
@Module({
  providers: [
    TenantsRepository,
    {
      provide: AuthService,
      inject: [CANOPY_CONFIG, TenantsRepository],
      useFactory: (config: CanopyConfig, tenants: TenantsRepository) => {
        const secrets = resolveSecrets(config);
        if (secrets.file && !config.adminKey) {
          new Logger('Auth').log(
            `admin key and token secret kept in ${secrets.file} (set CANOPY_ADMIN_KEY to choose)`,
          );
        }
        const tokens = new UserTokens(secrets.jwtSecret, {
          defaultSeconds: config.auth.tokenDefaultTtlSeconds,
          maxSeconds: config.auth.tokenMaxTtlSeconds,
        });
        return new AuthService(secrets.adminKey, tenants, tokens);
      },
    },
    AuthGuard,
  ],
  exports: [AuthService, TenantsRepository, AuthGuard],
})
export class AuthModule {}
