-- canopy_search_query()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The query of the current transaction's search (set_config('canopy.search', <tsquery text>, true)); NULL when
-- none is set, and then node_search shows nothing.
CREATE OR REPLACE FUNCTION public.canopy_search_query()
 RETURNS tsquery
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT NULLIF(current_setting('canopy.search', true), '')::tsquery $function$;
