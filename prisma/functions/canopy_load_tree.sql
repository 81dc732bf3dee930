-- canopy_load_tree(p_tenant uuid, p_user text, p_session text, p_timeout_ms integer, OUT session sessions, OUT nodes json)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- SessionStore.loadTree: the session (when p_user is given, only if it is p_user's) and its whole tree, fork's
-- shared nodes included, in id order ([{id, parentId, message, usage}]). session NULL and nodes NULL when there is
-- no such session. STABLE: both reads see the snapshot of the statement that calls it, so the tree and the
-- session's position are of the same moment, as when they were one statement.
CREATE OR REPLACE FUNCTION public.canopy_load_tree(p_tenant uuid, p_user text, p_session text, p_timeout_ms integer, OUT session sessions, OUT nodes json)
 RETURNS record
 LANGUAGE plpgsql
 STABLE
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL THEN
        RAISE EXCEPTION 'canopy_load_tree: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT sessions.* INTO session
      FROM sessions
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
       AND (p_user IS NULL OR sessions.user_id = p_user);
    IF NOT FOUND THEN
        RETURN;
    END IF;
    SELECT COALESCE(json_agg(json_build_object('id', tree.id, 'parentId', tree.parent_id, 'message', tree.message,
                                               'usage', tree.usage)
                             ORDER BY tree.id), '[]')
      INTO nodes
      FROM canopy_session_nodes(p_tenant, p_session) AS tree;
END
$function$;
