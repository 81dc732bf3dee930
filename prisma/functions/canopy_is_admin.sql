-- canopy_is_admin()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
CREATE OR REPLACE FUNCTION public.canopy_is_admin()
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT coalesce(current_setting('canopy.admin', true), '') = 'on' $function$;
