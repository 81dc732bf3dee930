-- Webhook senders lease per endpoint: at most a few attempts of one endpoint in flight across the deployment, and
-- the lease goes round the endpoints (and tenants) that have due deliveries instead of taking the oldest due rows
-- of any, so one endpoint's backlog or hanging attempts never hold what other endpoints' deliveries need.

-- An endpoint's pending deliveries in due order: the lease walks the endpoints with pending deliveries (one index
-- probe each) and takes each one's first due rows. It replaces the index on next_attempt_at alone, which only
-- served the lease of the oldest due rows of any endpoint.
CREATE INDEX "webhook_deliveries_pending_idx" ON "webhook_deliveries" ("webhook_id", "next_attempt_at")
    WHERE "status" = 'pending';
DROP INDEX "webhook_deliveries_due_idx";

-- The deliveries under a lease (a sender holds them: attempts in flight, or a dead sender's until it expires),
-- counted per endpoint against its limit. Settling an attempt clears locked_until, so this index stays as small
-- as what is in flight.
CREATE INDEX "webhook_deliveries_leased_idx" ON "webhook_deliveries" ("webhook_id", "locked_until")
    WHERE "locked_until" IS NOT NULL;
