// Population-level operations on sessions: search, count, fork, export / import, bulk delete and cancel, and the
// retention sweep.

export * from './catalog-filter';
export * from './session-catalog.service';
export * from './session-transfer.service';
export * from './retention-sweeper';
