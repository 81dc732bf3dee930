-- canopy_current_tenant()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- Row-level security. The app sets these per transaction (set_config(..., true)):
--   canopy.tenant_id  the tenant a transaction acts for;
--   canopy.admin      'on' only for the few named cross-tenant operations (admin routes, recovery sweeps);
--   canopy.key_hash   the hash of the API key being authenticated (lets that one key row be read).
-- A transaction that set none of them sees and writes nothing. FORCE applies the policies to the table owner too;
-- only a superuser or a BYPASSRLS role could skip them, and the app's role is neither.
CREATE OR REPLACE FUNCTION public.canopy_current_tenant()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT NULLIF(current_setting('canopy.tenant_id', true), '')::uuid $function$;
