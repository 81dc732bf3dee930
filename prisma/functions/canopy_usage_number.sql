-- canopy_usage_number(u jsonb, field text)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- One field of a stored usage as float8; NULL unless it is a JSON number (`->` on a non-object is NULL too).
CREATE OR REPLACE FUNCTION public.canopy_usage_number(u jsonb, field text)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT CASE WHEN jsonb_typeof(u -> field) = 'number' THEN (u -> field)::float8 END $function$;
