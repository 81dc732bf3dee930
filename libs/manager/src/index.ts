// @canopy/manager: sessions as a population — create, open, close, delete, list, where each is live, the
// activity feed, the catalog (search, bulk, fork, transfer, retention) — and the live sessions of this process
// with their presence, announcements and idle shutdown. It implements the session layer's LiveSessionHost port and
// assembles the engine (createSessionEngine, ManagerModule) for the api and the worker.

export * from './live-sessions';
export * from './session-manager.service';
export * from './tenant-settings.service';
export * from './session-processor';
export * from './session-engine';
export * from './manager.module';
export * from './catalog';
export * from './sharing';
