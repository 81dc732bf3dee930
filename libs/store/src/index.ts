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
export * from './session-store.port';
export * from './table-maintenance';
export * from './session-filters';
export * from './session-search';
export * from './session-catalog.store';
export * from './quota-status';
export * from './sql';
export * from './secret-box';
export * from './heavy-operations.repository';
export * from './files';
