-- canopy_index_nodes()
--
-- Defined last by prisma/migrations/20261215000000_index_nodes_once/migration.sql (first by 20261204000000_find_fork_expire).
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
--
-- Indexes the nodes one INSERT statement added (a commit's turn, a fork's path, an import's tree) in one
-- statement, each node's vector computed once; nodes without text get no row.
CREATE OR REPLACE FUNCTION public.canopy_index_nodes()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO node_search (tenant_id, session_id, node_id, search)
    SELECT indexed.tenant_id, indexed.session_id, indexed.id, indexed.search
      FROM (SELECT added.tenant_id, added.session_id, added.id, canopy_search_vector(added.message) AS search
              FROM added_nodes AS added
            OFFSET 0) AS indexed
     WHERE indexed.search <> ''::tsvector;
    RETURN NULL;
END
$function$;
