-- canopy_insert_nodes(p_tenant uuid, p_session text, p_nodes jsonb)
--
-- Defined last by prisma/migrations/20261208600000_import_batch_function/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- Inserts an imported conversation's nodes p_nodes ([{id, parentId, message, usage}] in id order, each one's parent in
-- the same array or stored before: an earlier batch of a staged import) into session p_session, each with its path
-- usage (root -> it, summed in path order: what a fork of it costs), its parent's plus its own, down each tree from the
-- nodes whose parent is a root's place or a stored node; a node no walk reaches is not inserted. Answers the nodes
-- inserted. The caller declares the tenant (a transaction's settings, or canopy_import_batch).
CREATE OR REPLACE FUNCTION public.canopy_insert_nodes(p_tenant uuid, p_session text, p_nodes jsonb)
 RETURNS integer
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_inserted INTEGER;
BEGIN
    INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, path_usage)
    WITH RECURSIVE added AS (
        SELECT n.id, n."parentId" AS parent_id, n.message, n.usage
          FROM jsonb_to_recordset(p_nodes) AS n(id INTEGER, "parentId" INTEGER, message JSONB, usage JSONB)
    ), down AS (
        SELECT added.*,
               CASE WHEN added.parent_id IS NULL THEN canopy_usage_vector(added.usage)
                    ELSE canopy_path_usage(earlier.path_usage, added.usage) END AS path_usage
          FROM added
          LEFT JOIN nodes AS earlier
            ON earlier.tenant_id = p_tenant AND earlier.session_id = p_session AND earlier.id = added.parent_id
         WHERE NOT EXISTS (SELECT 1 FROM added AS above WHERE above.id = added.parent_id)
        UNION ALL
        SELECT added.*, canopy_path_usage(down.path_usage, added.usage)
          FROM down JOIN added ON added.parent_id = down.id
    )
    SELECT p_tenant, p_session, down.id, down.parent_id, (down.message ->> 'role')::message_role, down.message,
           down.usage, down.path_usage
      FROM down;
    GET DIAGNOSTICS v_inserted = ROW_COUNT;
    RETURN v_inserted;
END
$function$;
