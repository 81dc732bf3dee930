-- canopy_current_tenant()
--
-- Defined last by prisma/migrations/20261121000000_init/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
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
