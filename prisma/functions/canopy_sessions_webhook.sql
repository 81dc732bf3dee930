-- canopy_sessions_webhook()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- A session's webhooks follow what tenants see: created when it is published (a small import is never staged),
-- deleted (with its audit event) only if it was ever published.
CREATE OR REPLACE FUNCTION public.canopy_sessions_webhook()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
END $function$;
