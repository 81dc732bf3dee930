-- canopy_path_usage(parent double precision[], u jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- A node's path usage: its parent's (NULL: not known, and so is this one) plus its own usage, field by field. One
-- expression (no FROM), so the planner inlines it into the statements calling it, planned once with them (see
-- 20261211000000_usage_functions_inline: a SQL function it cannot inline is planned again on every call).
CREATE OR REPLACE FUNCTION public.canopy_path_usage(parent double precision[], u jsonb)
 RETURNS double precision[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT CASE WHEN cardinality(parent) = 10 THEN ARRAY[
        parent[1] + COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        parent[2] + COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        parent[3] + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        parent[4] + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        parent[5] + COALESCE(canopy_usage_number(u, 'totalTokens'), COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        parent[6] + COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        parent[7] + COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        parent[8] + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        parent[9] + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        parent[10] + COALESCE(canopy_usage_number(u, 'totalCost'), COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0))]
    END
$function$;
