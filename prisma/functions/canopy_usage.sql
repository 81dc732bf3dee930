-- canopy_usage(u jsonb)
--
-- Defined last by prisma/migrations/20261122000000_hot_path_functions/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, or DROP and CREATE for a new signature) AND this file.
--
-- A stored usage read as the store reads it (makeUsage(toUsage(u)) in libs/store and libs/core): the ten Usage
-- fields, a field that is missing or no number counting 0, and a missing total the sum of its parts. Numbers are
-- float8 like JavaScript's, printed with the shortest exact digits (extra_float_digits = 1, pinned so a server
-- default cannot round them), so sums in SQL equal the same sums in JavaScript to the last bit.
CREATE OR REPLACE FUNCTION public.canopy_usage(u jsonb)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET extra_float_digits TO '1'
AS $function$
    SELECT jsonb_build_object(
               'inputTokens', p.input_tokens,
               'outputTokens', p.output_tokens,
               'cacheReadTokens', p.cache_read_tokens,
               'cacheWriteTokens', p.cache_write_tokens,
               'totalTokens', COALESCE(canopy_usage_number(u, 'totalTokens'),
                                       p.input_tokens + p.output_tokens + p.cache_read_tokens + p.cache_write_tokens),
               'inputCost', p.input_cost,
               'outputCost', p.output_cost,
               'cacheReadCost', p.cache_read_cost,
               'cacheWriteCost', p.cache_write_cost,
               'totalCost', COALESCE(canopy_usage_number(u, 'totalCost'),
                                     p.input_cost + p.output_cost + p.cache_read_cost + p.cache_write_cost))
      FROM (SELECT COALESCE(canopy_usage_number(u, 'inputTokens'), 0) AS input_tokens,
                   COALESCE(canopy_usage_number(u, 'outputTokens'), 0) AS output_tokens,
                   COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) AS cache_read_tokens,
                   COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0) AS cache_write_tokens,
                   COALESCE(canopy_usage_number(u, 'inputCost'), 0) AS input_cost,
                   COALESCE(canopy_usage_number(u, 'outputCost'), 0) AS output_cost,
                   COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) AS cache_read_cost,
                   COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0) AS cache_write_cost) AS p
$function$;
