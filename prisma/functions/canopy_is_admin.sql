-- canopy_is_admin()
--
-- Defined last by prisma/migrations/20261121000000_init/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
CREATE OR REPLACE FUNCTION public.canopy_is_admin()
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT coalesce(current_setting('canopy.admin', true), '') = 'on' $function$;
