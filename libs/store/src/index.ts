// @canopy/store: persistence. The tenant-scoped Database, the embedded PGlite runtime, migrations, and (with
// the session engine) the SessionStore port and its Postgres adapter. Prisma types never leave this library.

export * from './audit';
export * from './database';
export * from './store.module';
export * from './embedded-postgres';
export * from './embedded-supervisor';
export * from './migrator';
export * from './prisma-errors';
export * from './postgres-session.store';
export * from './run-stats';
export * from './session-store.port';
export * from './table-maintenance';
export * from './session-filters';
export * from './session-search';
export * from './session-catalog.store';
export * from './retention.repository';
export * from './audit.repository';
export * from './webhooks.repository';
export * from './quotas.repository';
export * from './secret-box';
export * from './provider-keys.repository';
export * from './heavy-operations.repository';
