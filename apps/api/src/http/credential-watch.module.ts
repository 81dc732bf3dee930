// The api's watch over credentials and the connections opened with them (CredentialWatch), in a module of its own
// so that the tenants feature's use cases get it as their CREDENTIAL_CHANGES port (@canopy/tenancy) while the
// gateway and the SSE streams of the api module use it too.

import { Module } from '@nestjs/common';
import { AuthModule } from '@canopy/auth';
import { RealtimeModule } from '@canopy/realtime';
import { CREDENTIAL_CHANGES } from '@canopy/tenancy';
import { CredentialWatch } from './credential-watch';

@Module({
  imports: [AuthModule, RealtimeModule.forRoot()],
  providers: [CredentialWatch, { provide: CREDENTIAL_CHANGES, useExisting: CredentialWatch }],
  exports: [CredentialWatch, CREDENTIAL_CHANGES],
})
export class CredentialWatchModule {}
