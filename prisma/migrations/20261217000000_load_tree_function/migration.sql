-- Opening a session (an api making it live: its first subscriber, command or read of its tree there) read the
-- session and its whole tree in a transaction of three round trips (BEGIN with the tenant's settings, the
-- statement, COMMIT), and Postgres planned the statement at every open: it was sent unnamed, and planning the
-- inlined canopy_session_nodes (three UNION ALL branches, two LATERALs) cost ~0.85 ms of the server's CPU a time
-- (log_statement_stats, cluster bench at 300 sessions). One statement in autocommit now, prepared per connection
-- like the run's: canopy_load_tree.

-- SessionStore.loadTree: the session (when p_user is given, only if it is p_user's) and its whole tree, fork's
-- shared nodes included, in id order ([{id, parentId, message, usage}]). session NULL and nodes NULL when there is
-- no such session. STABLE: both reads see the snapshot of the statement that calls it, so the tree and the
-- session's position are of the same moment, as when they were one statement.
CREATE FUNCTION canopy_load_tree(p_tenant uuid, p_user text, p_session text, p_timeout_ms integer,
                                 OUT session sessions, OUT nodes json)
    LANGUAGE plpgsql STABLE
    SET plan_cache_mode = force_generic_plan
    AS $$
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
$$;
