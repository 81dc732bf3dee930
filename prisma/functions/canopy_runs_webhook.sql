-- canopy_runs_webhook()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
CREATE OR REPLACE FUNCTION public.canopy_runs_webhook()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
END $function$;
