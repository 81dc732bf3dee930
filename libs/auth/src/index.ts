// @canopy/auth: who calls: API keys and end-user tokens authenticated (their tenants and keys are @canopy/tenancy's),
// the Principal and Scope of a request, and the guard.

export * from './auth.guard';
export * from './auth.module';
export * from './auth.service';
export * from './principal';
export * from './secrets';
export * from './token-issuance.service';
export * from './tokens';
