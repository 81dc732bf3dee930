-- canopy_audit_context()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The actor a transaction declared (base64 of a JSON object {actor, requestId}), or the system's.
CREATE OR REPLACE FUNCTION public.canopy_audit_context()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    v TEXT := NULLIF(current_setting('canopy.audit', true), '');
BEGIN
    IF v IS NULL THEN
        RETURN jsonb_build_object('actor', jsonb_build_object('type', 'system'), 'requestId', NULL);
    END IF;
    RETURN convert_from(decode(v, 'base64'), 'UTF8')::jsonb;
END $function$;
