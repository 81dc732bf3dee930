-- canopy_search_query()
--
-- Defined last by prisma/migrations/20261204000000_find_fork_expire/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
--
-- The query of the current transaction's search (set_config('canopy.search', <tsquery text>, true)); NULL when
-- none is set, and then node_search shows nothing.
CREATE OR REPLACE FUNCTION public.canopy_search_query()
 RETURNS tsquery
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT NULLIF(current_setting('canopy.search', true), '')::tsquery $function$;
