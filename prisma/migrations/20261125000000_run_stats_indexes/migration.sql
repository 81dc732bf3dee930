-- The dashboard's run statistics (GET /v1/stats): runs started and finished per minute, usage per tenant, over a
-- recent window. Both range scans are by time across tenants (the admin's view) or within one (row-level
-- security adds the tenant), so the indexes are on the times alone; finished_at only where a run has finished.

CREATE INDEX "runs_created_at_idx" ON "runs" ("created_at");
CREATE INDEX "runs_finished_at_idx" ON "runs" ("finished_at") WHERE "finished_at" IS NOT NULL;
