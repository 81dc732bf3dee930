-- Imports in bounded batches, and a per-tenant limit on concurrent heavy operations.
--
-- A large import is written in batches, each its own short transaction, into a STAGED session: one whose
-- import_token is set. A restrictive policy hides it from every transaction but those of the import holding that
-- token (canopy.import), so until the last batch is in and the import publishes it (import_token back to NULL) no
-- list, search, read, prompt or count sees it, and a failed import deletes it. A staged session nobody touched
-- past import_expires_at (its importer died) is deleted by the sweep.
ALTER TABLE "sessions" ADD COLUMN "import_token" TEXT, ADD COLUMN "import_expires_at" TIMESTAMPTZ(3);

CREATE POLICY "staged_import" ON "sessions" AS RESTRICTIVE
    USING ("import_token" IS NULL
           OR "import_token" = NULLIF(current_setting('canopy.import', true), '')
           OR "canopy_is_admin"());

CREATE INDEX "sessions_staged_idx" ON "sessions" ("import_expires_at") WHERE "import_token" IS NOT NULL;

-- A session's webhooks follow what tenants see: created when it is published (a small import is never staged),
-- deleted (with its audit event) only if it was ever published.
CREATE OR REPLACE FUNCTION "canopy_sessions_webhook"() RETURNS TRIGGER
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_ctx JSONB;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.import_token IS NULL THEN
            PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.created', jsonb_build_object(
                'sessionId', NEW.id, 'userId', NEW.user_id, 'model', NEW.model, 'title', NEW.title));
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.import_token IS NULL THEN
            PERFORM canopy_webhook_enqueue(OLD.tenant_id, 'session.deleted', jsonb_build_object(
                'sessionId', OLD.id, 'userId', OLD.user_id));
            -- The deletion's audit event, in its transaction (a tenant being deleted takes its log with it).
            IF EXISTS (SELECT 1 FROM tenants t WHERE t.id = OLD.tenant_id) THEN
                v_ctx := canopy_audit_context();
                INSERT INTO audit_events (tenant_id, actor, action, target_type, target_id, request_id)
                VALUES (OLD.tenant_id, v_ctx->'actor', 'session.delete', 'session', OLD.id, v_ctx->>'requestId');
            END IF;
        END IF;
    ELSIF OLD.import_token IS NOT NULL AND NEW.import_token IS NULL THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.created', jsonb_build_object(
            'sessionId', NEW.id, 'userId', NEW.user_id, 'model', NEW.model, 'title', NEW.title));
    ELSIF NEW.title IS DISTINCT FROM OLD.title THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.title', jsonb_build_object(
            'sessionId', NEW.id, 'userId', NEW.user_id, 'title', NEW.title));
    END IF;
    RETURN NULL;
END $$;

DROP TRIGGER "sessions_webhook" ON "sessions";
CREATE TRIGGER "sessions_webhook" AFTER INSERT OR DELETE OR UPDATE OF "title", "import_token" ON "sessions"
    FOR EACH ROW EXECUTE FUNCTION "canopy_sessions_webhook"();

-- Heavy operations in flight (imports, bulk exports and deletes, forks), each a lease a process renews while it
-- works: at most a few per tenant across the deployment, so one tenant's heavy work leaves the database to others.
-- A lease its process stopped renewing (the process died) lapses at expires_at.
CREATE TABLE "heavy_operations" (
    "tenant_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "heavy_operations_pkey" PRIMARY KEY ("tenant_id", "id"),
    CONSTRAINT "heavy_operations_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE
);

ALTER TABLE "heavy_operations" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "heavy_operations" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "heavy_operations"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());
