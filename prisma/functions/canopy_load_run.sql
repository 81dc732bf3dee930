-- canopy_load_run(p_tenant uuid, p_user text, p_session text, p_run uuid, p_timeout_ms integer, p_max_nodes integer, OUT session sessions, OUT run runs, OUT path_nodes json)
--
-- Defined last by prisma/migrations/20261208000000_node_token_counts/migration.sql (first by 20261206000000_baseline).
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The run's path nodes, virtual ones included; none (path_nodes NULL) when the path is longer than p_max_nodes
-- (NULL: any length): the caller then reads what it will send of it with canopy_path_tail.
CREATE OR REPLACE FUNCTION public.canopy_load_run(p_tenant uuid, p_user text, p_session text, p_run uuid, p_timeout_ms integer, p_max_nodes integer, OUT session sessions, OUT run runs, OUT path_nodes json)
 RETURNS record
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_run IS NULL THEN
        RAISE EXCEPTION 'canopy_load_run: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. The session the run must own, locked FOR SHARE: no end, pause or commit slips in, and the row read is
    --    the latest.
    SELECT sessions.* INTO session
      FROM sessions
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
       AND (p_user IS NULL OR sessions.user_id = p_user)
       AND sessions.status = 'busy' AND sessions.active_run_id = p_run
       FOR SHARE;
    IF NOT FOUND THEN
        RETURN;
    END IF;

    -- 2. Take the run.
    UPDATE runs
       SET status = 'running', attempts = runs.attempts + 1,
           started_at = COALESCE(runs.started_at, now()), updated_at = now()
     WHERE runs.tenant_id = p_tenant AND runs.id = p_run AND runs.status IN ('queued', 'running')
    RETURNING runs.* INTO run;
    IF NOT FOUND THEN
        session := NULL;
        RETURN;
    END IF;

    -- 3. The active path's nodes (shared ones included), in path order (ids not found are left out). This
    --    statement's snapshot is newer than the lock, so it sees the nodes of a commit the lock waited for.
    IF cardinality(session.path) > p_max_nodes THEN
        RETURN;
    END IF;
    SELECT COALESCE(json_agg(json_build_object('id', path_node.id, 'parentId', path_node.parent_id,
                                               'message', path_node.message, 'usage', path_node.usage,
                                               'tokens', path_node.tokens)
                             ORDER BY path_node.id), '[]')
      INTO path_nodes
      FROM canopy_session_nodes(p_tenant, p_session, session.path) AS path_node;
END
$function$;
