-- canopy_check_parents()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
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
