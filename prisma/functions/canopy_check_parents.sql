-- canopy_check_parents()
--
-- Defined last by prisma/migrations/20261209000000_cow_forks/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
CREATE OR REPLACE FUNCTION public.canopy_check_parents()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_orphan RECORD;
BEGIN
    SELECT added.session_id, added.id, added.parent_id INTO v_orphan
      FROM added_nodes AS added
     WHERE added.parent_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM nodes
                        WHERE nodes.tenant_id = added.tenant_id AND nodes.session_id = added.session_id
                          AND nodes.id = added.parent_id)
       AND NOT EXISTS (SELECT 1 FROM sessions
                        WHERE sessions.tenant_id = added.tenant_id AND sessions.id = added.session_id
                          AND added.parent_id <= cardinality(sessions.base_node_ids))
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'node % of session % has no parent %', v_orphan.id, v_orphan.session_id, v_orphan.parent_id
            USING ERRCODE = 'foreign_key_violation', TABLE = 'nodes', CONSTRAINT = 'nodes_parent_fkey';
    END IF;
    RETURN NULL;
END
$function$;
