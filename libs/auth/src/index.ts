// @canopy/auth: tenants, API keys, end-user tokens, the Principal and Scope of a request, and the guard.

export * from './api-keys';
export * from './auth.guard';
export * from './auth.module';
export * from './auth.service';
export * from './principal';
export * from './secrets';
export * from './tenants.repository';
export * from './tokens';
