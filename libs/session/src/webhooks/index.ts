// Webhooks: the SSRF guard, the signed sender and the dispatcher that drains the outbox.

export * from './ssrf-guard';
export * from './webhook-dispatcher';
export * from './webhook-sender';
