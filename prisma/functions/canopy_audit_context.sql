-- canopy_audit_context()
--
-- Defined last by prisma/migrations/20261206020000_saas_admin_webhooks_quotas/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
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
