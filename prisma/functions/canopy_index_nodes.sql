-- canopy_index_nodes()
--
-- Defined last by prisma/migrations/20261204000000_find_fork_expire/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, or DROP and CREATE for a new signature) AND this file.
--
-- Indexes the nodes one INSERT statement added (a commit's turn, a fork's path, an import's tree) in one
-- statement; nodes without text get no row.
CREATE OR REPLACE FUNCTION public.canopy_index_nodes()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO node_search (tenant_id, session_id, node_id, search)
    SELECT added.tenant_id, added.session_id, added.id, indexed.search
      FROM added_nodes AS added
     CROSS JOIN LATERAL (SELECT canopy_search_vector(added.message) AS search) AS indexed
     WHERE indexed.search <> ''::tsvector;
    RETURN NULL;
END
$function$;
