-- canopy_usage_add(a jsonb, b jsonb)
--
-- Defined last by prisma/migrations/20261122000000_hot_path_functions/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, or DROP and CREATE for a new signature) AND this file.
--
-- addUsage: two usages (each read as canopy_usage reads it) summed field by field.
CREATE OR REPLACE FUNCTION public.canopy_usage_add(a jsonb, b jsonb)
 RETURNS jsonb
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
 SET extra_float_digits TO '1'
AS $function$
    SELECT jsonb_object_agg(x.key, x.value::float8 + y.value::float8)
      FROM jsonb_each(canopy_usage(a)) AS x
      JOIN jsonb_each(canopy_usage(b)) AS y ON y.key = x.key
$function$;
