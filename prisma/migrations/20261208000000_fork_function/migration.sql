-- A fork is ONE call of canopy_fork, sent in autocommit like the run's hot path (issue 15: a fork costs O(path
-- length), target < 20 ms on a 10,000-node tree). As one ad-hoc statement it spent ~3-10 ms planning its CTEs on
-- every call, two round trips more on BEGIN/COMMIT, and a primary-key lookup per path node; the function's
-- statements are planned once per connection. A third of what is left was the search index recomputing the
-- tsvector of every copied message (canopy_index_nodes): a fork copies the source's vectors instead, the trigger
-- standing aside for that one statement (canopy.index_nodes = 'off', transaction-local).

-- The trigger of 20261204000000_find_fork_expire, now skipped when the inserting statement indexes its nodes itself.
DROP TRIGGER "nodes_index_search" ON "nodes";
CREATE TRIGGER "nodes_index_search" AFTER INSERT ON "nodes"
    REFERENCING NEW TABLE AS added_nodes
    FOR EACH STATEMENT
    WHEN (COALESCE(current_setting('canopy.index_nodes', true), '') <> 'off')
    EXECUTE FUNCTION "canopy_index_nodes"();

CREATE FUNCTION "canopy_fork"(p_tenant uuid, p_user text, p_source text, p_node integer, p_id text, p_title text,
                              p_title_given boolean, p_metadata jsonb, p_owner text, p_timeout_ms integer,
                              OUT outcome text, OUT session sessions, OUT copied integer)
    RETURNS record
    LANGUAGE plpgsql
    AS $$
DECLARE
    v_source sessions;
    v_tip integer;
    v_position integer;
    v_ids integer[];
    v_result record;
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_source IS NULL OR p_id IS NULL OR p_title_given IS NULL THEN
        RAISE EXCEPTION 'canopy_fork: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. The source, the caller's own when p_user is given. Read, never locked or written: a busy source forks
    --    from its committed nodes.
    SELECT * INTO v_source FROM sessions
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_source
       AND (p_user IS NULL OR sessions.user_id = p_user);
    IF NOT FOUND THEN
        outcome := 'not_found';
        RETURN;
    END IF;

    -- 2. The path root -> tip (default: the active path's tip). A node of the stored active path takes its
    --    prefix; any other node walks up the parent pointers, one primary-key lookup a step.
    v_tip := COALESCE(p_node, v_source.head);
    IF v_tip IS NULL THEN
        v_ids := '{}';
    ELSE
        v_position := array_position(v_source.path, v_tip);
        IF v_position IS NOT NULL THEN
            v_ids := v_source.path[1:v_position];
        ELSE
            WITH RECURSIVE up AS (
                SELECT nodes.id, nodes.parent_id, 1 AS depth FROM nodes
                 WHERE nodes.tenant_id = p_tenant AND nodes.session_id = p_source AND nodes.id = v_tip
                UNION ALL
                SELECT nodes.id, nodes.parent_id, up.depth + 1 FROM up JOIN nodes
                    ON nodes.tenant_id = p_tenant AND nodes.session_id = p_source AND nodes.id = up.parent_id
            )
            SELECT array_agg(up.id ORDER BY up.depth DESC) INTO v_ids FROM up;
            IF v_ids IS NULL THEN
                outcome := 'node_not_found';
                RETURN;
            END IF;
        END IF;
    END IF;

    -- 3. The new session (path 1..n, each node's cursor its only child, usage summed as sumUsage does) and its
    --    nodes, renumbered from 1 in path order, in one statement: the session row exists before its nodes'
    --    foreign keys are checked at the statement's end.
    PERFORM set_config('canopy.index_nodes', 'off', true);
    WITH path AS (
        SELECT nodes.role, nodes.message, nodes.usage, step.new_id::integer AS new_id
          FROM unnest(v_ids) WITH ORDINALITY AS step(id, new_id)
          JOIN nodes ON nodes.tenant_id = p_tenant AND nodes.session_id = p_source AND nodes.id = step.id
    ), created AS (
        INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata,
                              idle_shutdown_after_ms, path, cursors, head, next_node_id, usage)
        SELECT p_tenant, p_id, COALESCE(p_user, p_owner, v_source.user_id),
               CASE WHEN p_title_given THEN p_title ELSE v_source.title END,
               v_source.model, v_source.system, v_source.opts, v_source.tools,
               COALESCE(p_metadata, v_source.metadata)
                   || jsonb_build_object('forkedFrom', jsonb_build_object('sessionId', v_source.id, 'nodeId', v_tip)),
               v_source.idle_shutdown_after_ms,
               ARRAY(SELECT generate_series(1, cardinality(v_ids))),
               COALESCE((SELECT jsonb_object_agg((g - 1)::text, g) FROM generate_series(2, cardinality(v_ids)) g),
                        '{}'),
               NULLIF(cardinality(v_ids), 0),
               cardinality(v_ids) + 1,
               (SELECT jsonb_build_object(
                   'inputTokens', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'inputTokens'), 0)), 0),
                   'outputTokens', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'outputTokens'), 0)), 0),
                   'cacheReadTokens', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'cacheReadTokens'), 0)), 0),
                   'cacheWriteTokens', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'cacheWriteTokens'), 0)), 0),
                   'inputCost', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'inputCost'), 0)), 0),
                   'outputCost', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'outputCost'), 0)), 0),
                   'cacheReadCost', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'cacheReadCost'), 0)), 0),
                   'cacheWriteCost', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'cacheWriteCost'), 0)), 0),
                   'totalTokens', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'totalTokens'),
                       COALESCE(canopy_usage_number(path.usage, 'inputTokens'), 0)
                       + COALESCE(canopy_usage_number(path.usage, 'outputTokens'), 0)
                       + COALESCE(canopy_usage_number(path.usage, 'cacheReadTokens'), 0)
                       + COALESCE(canopy_usage_number(path.usage, 'cacheWriteTokens'), 0))), 0),
                   'totalCost', COALESCE(sum(COALESCE(canopy_usage_number(path.usage, 'totalCost'),
                       COALESCE(canopy_usage_number(path.usage, 'inputCost'), 0)
                       + COALESCE(canopy_usage_number(path.usage, 'outputCost'), 0)
                       + COALESCE(canopy_usage_number(path.usage, 'cacheReadCost'), 0)
                       + COALESCE(canopy_usage_number(path.usage, 'cacheWriteCost'), 0))), 0))
                  FROM path)
        RETURNING *
    ), inserted AS (
        INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
        SELECT p_tenant, created.id, path.new_id, NULLIF(path.new_id - 1, 0), path.role, path.message, path.usage
          FROM path, created
        RETURNING 1
    )
    SELECT created AS forked, (SELECT count(*) FROM inserted)::integer AS copied INTO v_result FROM created;
    PERFORM set_config('canopy.index_nodes', '', true);
    session := v_result.forked;
    copied := v_result.copied;
    IF copied <> cardinality(v_ids) THEN
        -- A node of the stored path is missing: the tree is not what the session says. Nothing is kept.
        RAISE EXCEPTION 'canopy_fork: % of % path nodes of session % found', copied, cardinality(v_ids), p_source
            USING ERRCODE = 'data_corrupted';
    END IF;

    -- 4. The copied nodes' search vectors, from the source's index rows. node_search shows a transaction only the
    --    rows its query (canopy.search) matches: `x | !x` matches every row, of this tenant only (the policy's
    --    other half). Messages without text have no row and get none.
    PERFORM set_config('canopy.search', '''canopy'' | !''canopy''', true);
    INSERT INTO node_search (tenant_id, session_id, node_id, search)
    SELECT p_tenant, p_id, step.new_id, node_search.search
      FROM unnest(v_ids) WITH ORDINALITY AS step(id, new_id)
      JOIN node_search ON node_search.tenant_id = p_tenant AND node_search.session_id = p_source
                      AND node_search.node_id = step.id;
    PERFORM set_config('canopy.search', '', true);
    outcome := 'ok';
END
$$;
