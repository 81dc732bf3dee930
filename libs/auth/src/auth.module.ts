// Authentication for the api: secrets, tenants and keys, user tokens, and the global guard.

import { Logger, Module } from '@nestjs/common';
import { CANOPY_CONFIG, type CanopyConfig } from '@canopy/common';
import { StoreModule } from '@canopy/store';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { describeSecretSources, resolveSecrets } from './secrets';
import { TenantsRepository } from './tenants.repository';
import { UserTokens } from './tokens';

@Module({
  imports: [StoreModule.forRoot()],
  providers: [
    TenantsRepository,
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
  ],
  exports: [AuthService, TenantsRepository, AuthGuard],
})
export class AuthModule {}
