-- Double texting (issue 16): prompts sent with ifBusy "enqueue", "interrupt" or "rollback" wait here for their
-- turn, so they survive any process (a worker crash included) until a run of theirs starts. The run that takes an
-- entry gets the entry's id as its own id: a second start of the same entry fails on the runs' primary key, which
-- is what makes each prompt run once even when two processes drain the queue at once. Order: interrupting ones
-- (front) first, then by arrival (seq).
CREATE TABLE "queued_prompts" (
    "id" UUID NOT NULL,
    "tenant_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "mode" TEXT NOT NULL,
    "front" BOOLEAN NOT NULL DEFAULT false,
    "input" JSONB NOT NULL,
    "actor" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "queued_prompts_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "queued_prompts_mode_check" CHECK ("mode" IN ('enqueue', 'interrupt', 'rollback')),
    CONSTRAINT "queued_prompts_session_fkey" FOREIGN KEY ("tenant_id", "session_id")
        REFERENCES "sessions"("tenant_id", "id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "queued_prompts_order_idx" ON "queued_prompts" ("tenant_id", "session_id", "front" DESC, "seq");

ALTER TABLE "queued_prompts" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "queued_prompts" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "queued_prompts"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());
