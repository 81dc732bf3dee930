-- canopy_path_usage(parent double precision[], u jsonb)
--
-- Defined last by prisma/migrations/20261212000000_fork_path_usage/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, or DROP and CREATE for a new signature) AND this file.
--
-- A node's path usage: its parent's (NULL: not known, and so is this one) plus its own usage.
CREATE OR REPLACE FUNCTION public.canopy_path_usage(parent double precision[], u jsonb)
 RETURNS double precision[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT CASE WHEN parent IS NOT NULL AND cardinality(parent) = 10 THEN
        ARRAY[parent[1] + v[1], parent[2] + v[2], parent[3] + v[3], parent[4] + v[4], parent[5] + v[5],
              parent[6] + v[6], parent[7] + v[7], parent[8] + v[8], parent[9] + v[9], parent[10] + v[10]]
    END
      FROM (SELECT canopy_usage_vector(u) AS v) AS own
$function$;
