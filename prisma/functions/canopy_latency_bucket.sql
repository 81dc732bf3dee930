-- canopy_latency_bucket(p_ms double precision)
--
-- Defined last by prisma/migrations/20261209210000_run_stats_daily/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The bucket of a duration in run_stats_daily's histograms (1-based, 64 buckets): 1 below 10 ms, then k covers
-- [10 * 1.25^(k-2), 10 * 1.25^(k-1)) ms, the last everything from about 2.8 hours on. Percentiles read from them
-- are within a bucket's width (25%) of the exact ones.
CREATE OR REPLACE FUNCTION public.canopy_latency_bucket(p_ms double precision)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE
AS $function$
    SELECT CASE WHEN p_ms IS NULL THEN NULL
                WHEN p_ms < 10 THEN 1
                ELSE least(64, 2 + floor(ln(p_ms / 10) / ln(1.25))::integer) END
$function$;
