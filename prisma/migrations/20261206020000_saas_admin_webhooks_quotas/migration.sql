-- Running a SaaS on Canopy (issue 16): tenant administration (disable, key names and expiry), the audit log,
-- webhooks with a transactional outbox, quotas, and per-tenant provider keys. Every new table carries tenant_id
-- under the same forced row-level security as the others.

-- Tenant administration: a disabled tenant's credentials answer 403 tenant_disabled; keys may expire.
ALTER TABLE "tenants" ADD COLUMN "disabled_at" TIMESTAMPTZ(3);
ALTER TABLE "api_keys" ADD COLUMN "expires_at" TIMESTAMPTZ(3);
CREATE INDEX "tenants_name_idx" ON "tenants" ("name", "id");

-- Usage by tenant and time (GET /v1/usage, quotas): one range scan per tenant.
CREATE INDEX "runs_tenant_created_idx" ON "runs" ("tenant_id", "created_at");

-- The audit log: who did what, when, under which request; before/after where small. Never message text or
-- secrets. Written in the same transaction as the action (by the repositories, or by the trigger below for
-- session deletions, which reads the actor the transaction declared in canopy.audit).
CREATE TABLE "audit_events" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "tenant_id" UUID NOT NULL,
    "actor" JSONB NOT NULL,
    "action" TEXT NOT NULL,
    "target_type" TEXT NOT NULL,
    "target_id" TEXT,
    "request_id" TEXT,
    "before" JSONB,
    "after" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "audit_events_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "audit_events_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);
CREATE INDEX "audit_events_tenant_created_idx" ON "audit_events" ("tenant_id", "created_at" DESC, "id" DESC);
CREATE INDEX "audit_events_created_idx" ON "audit_events" ("created_at" DESC, "id" DESC);

-- Webhook endpoints of a tenant. The signing secret is shown once at creation and kept to sign deliveries.
CREATE TABLE "webhooks" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "tenant_id" UUID NOT NULL,
    "url" TEXT NOT NULL,
    "events" TEXT[] NOT NULL,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "secret" TEXT NOT NULL,
    "description" TEXT,
    "disabled_reason" TEXT,
    "failing_since" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "webhooks_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhooks_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);
CREATE INDEX "webhooks_tenant_idx" ON "webhooks" ("tenant_id");

-- The outbox: one row per (event, endpoint), inserted by the triggers below in the transaction that changed the
-- run or session, so an event and its delivery commit together. Senders claim due rows with a lease
-- (locked_until, FOR UPDATE SKIP LOCKED): a sender that dies mid-delivery leaves the lease to expire and another
-- takes the row again (at-least-once; the receiver dedupes by webhook-id, the row's id).
CREATE TABLE "webhook_deliveries" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "tenant_id" UUID NOT NULL,
    "webhook_id" UUID NOT NULL,
    "event_type" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "attempt_log" JSONB NOT NULL DEFAULT '[]',
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "locked_until" TIMESTAMPTZ(3),
    "last_status_code" INTEGER,
    "last_error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),
    CONSTRAINT "webhook_deliveries_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "webhook_deliveries_status_check" CHECK ("status" IN ('pending', 'delivered', 'failed')),
    CONSTRAINT "webhook_deliveries_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE,
    CONSTRAINT "webhook_deliveries_webhook_id_fkey" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE
);
CREATE INDEX "webhook_deliveries_webhook_idx" ON "webhook_deliveries" ("webhook_id", "created_at" DESC, "id" DESC);
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" ("next_attempt_at") WHERE "status" = 'pending';

-- Quotas: per tenant (user_id NULL, set by the admin) or per user of a tenant (set by the tenant).
CREATE TABLE "quotas" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "tenant_id" UUID NOT NULL,
    "user_id" TEXT,
    "metric" TEXT NOT NULL,
    "period" TEXT NOT NULL,
    "limit" DOUBLE PRECISION NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "quotas_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "quotas_metric_check" CHECK ("metric" IN ('tokens', 'cost', 'runs')),
    CONSTRAINT "quotas_period_check" CHECK ("period" IN ('day', 'month')),
    CONSTRAINT "quotas_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);
CREATE UNIQUE INDEX "quotas_scope_key" ON "quotas" ("tenant_id", COALESCE("user_id", ''), "metric", "period");

-- A tenant's own provider keys (bring your own key), AES-256-GCM under the deployment's key: never readable back.
CREATE TABLE "provider_keys" (
    "tenant_id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "encrypted_key" TEXT NOT NULL,
    "base_url" TEXT,
    "models" TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "key_hint" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "provider_keys_pkey" PRIMARY KEY ("tenant_id", "provider"),
    CONSTRAINT "provider_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);

ALTER TABLE "audit_events" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "audit_events" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "audit_events"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "webhooks" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "webhooks" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "webhooks"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "webhook_deliveries" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "webhook_deliveries" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "webhook_deliveries"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "quotas" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "quotas" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "quotas"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "provider_keys" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "provider_keys" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "provider_keys"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

-- The outbox writer: one delivery per enabled endpoint of the tenant that wants the event. SECURITY INVOKER, so
-- row-level security applies (the transaction's tenant sees only its own endpoints).
CREATE FUNCTION "canopy_webhook_enqueue"(p_tenant UUID, p_type TEXT, p_data JSONB) RETURNS VOID
    LANGUAGE plpgsql VOLATILE
    AS $$
BEGIN
    INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload)
    SELECT w.tenant_id, w.id, p_type,
           jsonb_build_object('type', p_type,
                              'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                              'data', p_data || jsonb_build_object('tenantId', p_tenant))
      FROM webhooks w
     WHERE w.tenant_id = p_tenant AND w.enabled AND p_type = ANY (w.events)
       -- Not while the tenant itself is being deleted (its endpoints go with it).
       AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = p_tenant);
END $$;

CREATE FUNCTION "canopy_runs_webhook"() RETURNS TRIGGER
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_type TEXT;
BEGIN
    IF NEW.status IS NOT DISTINCT FROM OLD.status THEN
        RETURN NULL;
    END IF;
    v_type := CASE NEW.status
        WHEN 'completed' THEN 'run.completed'
        WHEN 'error' THEN 'run.failed'
        WHEN 'cancelled' THEN 'run.cancelled'
        WHEN 'paused' THEN 'run.paused'
        ELSE NULL END;
    IF v_type IS NOT NULL THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, v_type, jsonb_build_object(
            'runId', NEW.id, 'sessionId', NEW.session_id, 'kind', NEW.kind, 'status', NEW.status,
            'error', NEW.error, 'usage', NEW.usage,
            'finishedAt', to_char(NEW.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER "runs_webhook" AFTER UPDATE OF "status" ON "runs"
    FOR EACH ROW EXECUTE FUNCTION "canopy_runs_webhook"();

-- The actor a transaction declared (base64 of a JSON object {actor, requestId}), or the system's.
CREATE FUNCTION "canopy_audit_context"() RETURNS JSONB
    LANGUAGE plpgsql STABLE
    AS $$
DECLARE
    v TEXT := NULLIF(current_setting('canopy.audit', true), '');
BEGIN
    IF v IS NULL THEN
        RETURN jsonb_build_object('actor', jsonb_build_object('type', 'system'), 'requestId', NULL);
    END IF;
    RETURN convert_from(decode(v, 'base64'), 'UTF8')::jsonb;
END $$;

CREATE FUNCTION "canopy_sessions_webhook"() RETURNS TRIGGER
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_ctx JSONB;
BEGIN
    IF TG_OP = 'INSERT' THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.created', jsonb_build_object(
            'sessionId', NEW.id, 'userId', NEW.user_id, 'model', NEW.model, 'title', NEW.title));
    ELSIF TG_OP = 'DELETE' THEN
        PERFORM canopy_webhook_enqueue(OLD.tenant_id, 'session.deleted', jsonb_build_object(
            'sessionId', OLD.id, 'userId', OLD.user_id));
        -- The deletion's audit event, in its transaction (a tenant being deleted takes its log with it).
        IF EXISTS (SELECT 1 FROM tenants t WHERE t.id = OLD.tenant_id) THEN
            v_ctx := canopy_audit_context();
            INSERT INTO audit_events (tenant_id, actor, action, target_type, target_id, request_id)
            VALUES (OLD.tenant_id, v_ctx->'actor', 'session.delete', 'session', OLD.id, v_ctx->>'requestId');
        END IF;
    ELSIF NEW.title IS DISTINCT FROM OLD.title THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.title', jsonb_build_object(
            'sessionId', NEW.id, 'userId', NEW.user_id, 'title', NEW.title));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER "sessions_webhook" AFTER INSERT OR DELETE OR UPDATE OF "title" ON "sessions"
    FOR EACH ROW EXECUTE FUNCTION "canopy_sessions_webhook"();
