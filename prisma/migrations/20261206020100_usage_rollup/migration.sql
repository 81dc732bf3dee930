-- Usage rolled up per tenant, UTC day and session (GET /v1/usage and quota checks read this, not the runs): a
-- run counts when it is created (runs) and adds its usage when it ends (completed, error or cancelled), in the
-- transaction that wrote it, by the trigger below. Rows outlive their session (usage is still owed after a
-- delete); the session's user and model are copied in. Over a year, a tenant reads one row per session and day.

CREATE TABLE "usage_daily" (
    "tenant_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "session_id" TEXT NOT NULL,
    "user_id" TEXT,
    "model" TEXT,
    "runs" INTEGER NOT NULL DEFAULT 0,
    "input_tokens" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "output_tokens" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "total_tokens" DOUBLE PRECISION NOT NULL DEFAULT 0,
    "total_cost" DOUBLE PRECISION NOT NULL DEFAULT 0,
    CONSTRAINT "usage_daily_pkey" PRIMARY KEY ("tenant_id", "day", "session_id"),
    CONSTRAINT "usage_daily_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);
CREATE INDEX "usage_daily_user_idx" ON "usage_daily" ("tenant_id", "user_id", "day");

ALTER TABLE "usage_daily" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "usage_daily" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "usage_daily"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

CREATE FUNCTION "canopy_runs_usage"() RETURNS TRIGGER
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_runs INTEGER := 0;
    v_usage JSONB := '{}'::jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        v_runs := 1;
    ELSIF NEW.status IN ('completed', 'error', 'cancelled')
          AND OLD.status NOT IN ('completed', 'error', 'cancelled') THEN
        v_usage := coalesce(NEW.usage, '{}'::jsonb);
    ELSE
        RETURN NULL;
    END IF;
    INSERT INTO usage_daily AS u (tenant_id, day, session_id, user_id, model, runs, input_tokens, output_tokens,
                                  total_tokens, total_cost)
    SELECT NEW.tenant_id, (NEW.created_at AT TIME ZONE 'UTC')::date, NEW.session_id, s.user_id, s.model, v_runs,
           coalesce((v_usage->>'inputTokens')::float8, 0), coalesce((v_usage->>'outputTokens')::float8, 0),
           coalesce((v_usage->>'totalTokens')::float8, 0), coalesce((v_usage->>'totalCost')::float8, 0)
      FROM (SELECT 1) one
      LEFT JOIN sessions s ON s.tenant_id = NEW.tenant_id AND s.id = NEW.session_id
    ON CONFLICT (tenant_id, day, session_id) DO UPDATE
       SET runs = u.runs + EXCLUDED.runs,
           input_tokens = u.input_tokens + EXCLUDED.input_tokens,
           output_tokens = u.output_tokens + EXCLUDED.output_tokens,
           total_tokens = u.total_tokens + EXCLUDED.total_tokens,
           total_cost = u.total_cost + EXCLUDED.total_cost,
           user_id = coalesce(EXCLUDED.user_id, u.user_id),
           model = coalesce(EXCLUDED.model, u.model);
    RETURN NULL;
END $$;

CREATE TRIGGER "runs_usage_insert" AFTER INSERT ON "runs"
    FOR EACH ROW EXECUTE FUNCTION "canopy_runs_usage"();
CREATE TRIGGER "runs_usage_end" AFTER UPDATE OF "status" ON "runs"
    FOR EACH ROW EXECUTE FUNCTION "canopy_runs_usage"();

-- The runs stored before this migration, rolled up across tenants (this transaction only).
SELECT set_config('canopy.admin', 'on', true);
INSERT INTO "usage_daily" ("tenant_id", "day", "session_id", "user_id", "model", "runs", "input_tokens",
                           "output_tokens", "total_tokens", "total_cost")
SELECT r."tenant_id", (r."created_at" AT TIME ZONE 'UTC')::date, r."session_id", max(s."user_id"), max(s."model"),
       count(*),
       coalesce(sum((r."usage"->>'inputTokens')::float8) FILTER (WHERE r."status" IN ('completed', 'error', 'cancelled')), 0),
       coalesce(sum((r."usage"->>'outputTokens')::float8) FILTER (WHERE r."status" IN ('completed', 'error', 'cancelled')), 0),
       coalesce(sum((r."usage"->>'totalTokens')::float8) FILTER (WHERE r."status" IN ('completed', 'error', 'cancelled')), 0),
       coalesce(sum((r."usage"->>'totalCost')::float8) FILTER (WHERE r."status" IN ('completed', 'error', 'cancelled')), 0)
  FROM "runs" r LEFT JOIN "sessions" s ON s."tenant_id" = r."tenant_id" AND s."id" = r."session_id"
 GROUP BY 1, 2, 3;
SELECT set_config('canopy.admin', '', true);
