-- canopy_index_nodes()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
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
