-- canopy_usage_vector(u jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- A usage as the vector of its ten fields, each read as canopy_usage reads it (a missing total the sum of parts).
CREATE OR REPLACE FUNCTION public.canopy_usage_vector(u jsonb)
 RETURNS double precision[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT ARRAY[
        COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        COALESCE(canopy_usage_number(u, 'totalTokens'),
                 COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        COALESCE(canopy_usage_number(u, 'totalCost'),
                 COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0))]
$function$;
