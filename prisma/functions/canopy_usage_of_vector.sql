-- canopy_usage_of_vector(v double precision[])
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
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
