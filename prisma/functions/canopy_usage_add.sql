-- canopy_usage_add(a jsonb, b jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- addUsage: two usages (each read as canopy_usage reads it) summed field by field.
CREATE OR REPLACE FUNCTION public.canopy_usage_add(a jsonb, b jsonb)
 RETURNS jsonb
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT jsonb_build_object(
        'inputTokens', COALESCE(canopy_usage_number(a, 'inputTokens'), 0) + COALESCE(canopy_usage_number(b, 'inputTokens'), 0),
        'outputTokens', COALESCE(canopy_usage_number(a, 'outputTokens'), 0) + COALESCE(canopy_usage_number(b, 'outputTokens'), 0),
        'cacheReadTokens', COALESCE(canopy_usage_number(a, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadTokens'), 0),
        'cacheWriteTokens', COALESCE(canopy_usage_number(a, 'cacheWriteTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteTokens'), 0),
        'totalTokens', COALESCE(canopy_usage_number(a, 'totalTokens'),
                        COALESCE(canopy_usage_number(a, 'inputTokens'), 0) + COALESCE(canopy_usage_number(a, 'outputTokens'), 0) + COALESCE(canopy_usage_number(a, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(a, 'cacheWriteTokens'), 0))
        + COALESCE(canopy_usage_number(b, 'totalTokens'),
                        COALESCE(canopy_usage_number(b, 'inputTokens'), 0) + COALESCE(canopy_usage_number(b, 'outputTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteTokens'), 0)),
        'inputCost', COALESCE(canopy_usage_number(a, 'inputCost'), 0) + COALESCE(canopy_usage_number(b, 'inputCost'), 0),
        'outputCost', COALESCE(canopy_usage_number(a, 'outputCost'), 0) + COALESCE(canopy_usage_number(b, 'outputCost'), 0),
        'cacheReadCost', COALESCE(canopy_usage_number(a, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadCost'), 0),
        'cacheWriteCost', COALESCE(canopy_usage_number(a, 'cacheWriteCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteCost'), 0),
        'totalCost', COALESCE(canopy_usage_number(a, 'totalCost'),
                        COALESCE(canopy_usage_number(a, 'inputCost'), 0) + COALESCE(canopy_usage_number(a, 'outputCost'), 0) + COALESCE(canopy_usage_number(a, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(a, 'cacheWriteCost'), 0))
        + COALESCE(canopy_usage_number(b, 'totalCost'),
                        COALESCE(canopy_usage_number(b, 'inputCost'), 0) + COALESCE(canopy_usage_number(b, 'outputCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteCost'), 0)))
$function$;
