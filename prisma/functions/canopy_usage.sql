-- canopy_usage(u jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- A stored usage read as the store reads it (makeUsage(toUsage(u)) in libs/store and libs/core): the ten Usage
-- fields, a field that is missing or no number counting 0, and a missing total the sum of its parts. Numbers are
-- float8 like JavaScript's, printed with the shortest exact digits (extra_float_digits = 1, pinned so a server
-- default cannot round them), so sums in SQL equal the same sums in JavaScript to the last bit.
CREATE OR REPLACE FUNCTION public.canopy_usage(u jsonb)
 RETURNS jsonb
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT jsonb_build_object(
        'inputTokens', COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        'outputTokens', COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        'cacheReadTokens', COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        'cacheWriteTokens', COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        'totalTokens', COALESCE(canopy_usage_number(u, 'totalTokens'),
                        COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        'inputCost', COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        'outputCost', COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        'cacheReadCost', COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        'cacheWriteCost', COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        'totalCost', COALESCE(canopy_usage_number(u, 'totalCost'),
                        COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0)))
$function$;
