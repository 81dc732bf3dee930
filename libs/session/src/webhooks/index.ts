// Webhooks: the signed sender (through the SSRF guard of @canopy/common) and the dispatcher that drains the outbox.

export * from './webhook-dispatcher';
export * from './webhook-sender';
