-- canopy_usage_of_vector(v double precision[])
--
-- Defined last by prisma/migrations/20261212000000_fork_path_usage/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
--
-- The vector as a stored usage (canopy_usage's object); NULL for NULL.
CREATE OR REPLACE FUNCTION public.canopy_usage_of_vector(v double precision[])
 RETURNS jsonb
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT CASE WHEN v IS NOT NULL THEN
        jsonb_build_object('inputTokens', v[1], 'outputTokens', v[2], 'cacheReadTokens', v[3],
                           'cacheWriteTokens', v[4], 'totalTokens', v[5], 'inputCost', v[6], 'outputCost', v[7],
                           'cacheReadCost', v[8], 'cacheWriteCost', v[9], 'totalCost', v[10])
    END
$function$;
