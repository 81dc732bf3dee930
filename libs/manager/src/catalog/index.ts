// Population-level operations on sessions: search, count, fork, export / import, bulk delete and cancel, the
// retention sweep, and the limits on heavy operations.

export * from './catalog-filter';
export * from './session-catalog.service';
export * from './session-transfer.service';
export * from './retention-sweeper';
export * from './tenant-runs-canceller';
export * from './heavy-operations';
export * from './import-converter';
export * from './import-preparation';
