-- fork keeps summaries: the functions as prisma/functions holds them.

-- Fork: the new session shares the path's nodes with their session instead of copying them, and keeps the context
-- summaries stored against them (renumbered as the nodes are).
CREATE OR REPLACE FUNCTION public.canopy_fork(p_tenant uuid, p_user text, p_source text, p_node integer, p_id text, p_title text, p_title_given boolean, p_metadata jsonb, p_owner text, p_timeout_ms integer, OUT outcome text, OUT session sessions, OUT copied integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_source sessions;
    v_shared integer;      -- the source's virtual nodes (ids 1..v_shared)
    v_tip integer;
    v_position integer;
    v_top_parent integer;  -- the parent of the first real node a walk up reached
    v_ids integer[];       -- the path root -> tip, in the source's ids
    v_kept integer;        -- how many of them are the source's virtual nodes: 1..v_kept
    v_base_session text;
    v_base_ids integer[];
    v_usage jsonb;
    v_tip_found boolean;
    v_found integer;
    v_attempt integer := 0;
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_source IS NULL OR p_id IS NULL OR p_title_given IS NULL THEN
        RAISE EXCEPTION 'canopy_fork: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. The source, the caller's own when p_user is given, and its base when it has one, locked FOR KEY SHARE:
    --    only a deletion waits for that lock (a busy source's commits update the row without a key change, and
    --    its FOR UPDATE fence waits only for this call), so no fork is made on a session whose deletion already
    --    materialized its forks. A base deleted meanwhile materialized the source: read it again.
    LOOP
        SELECT * INTO v_source FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_source
           AND (p_user IS NULL OR sessions.user_id = p_user)
           FOR KEY SHARE;
        IF NOT FOUND THEN
            outcome := 'not_found';
            RETURN;
        END IF;
        EXIT WHEN v_source.base_session_id IS NULL;
        PERFORM 1 FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = v_source.base_session_id
           FOR KEY SHARE;
        EXIT WHEN FOUND;
        v_attempt := v_attempt + 1;
        IF v_attempt >= 3 THEN
            RAISE EXCEPTION 'canopy_fork: the base of session % keeps changing', p_source
                USING ERRCODE = 'serialization_failure';
        END IF;
    END LOOP;
    v_shared := COALESCE(cardinality(v_source.base_node_ids), 0);

    -- 2. The path root -> tip (default: the active path's tip). A node of the stored active path takes its
    --    prefix; a virtual node's path is 1..it; any other node walks up the parent pointers of the real nodes,
    --    one primary-key lookup a step, down to a virtual parent (the path's prefix 1..it) or the root.
    v_tip := COALESCE(p_node, v_source.head);
    IF v_tip IS NULL THEN
        v_ids := '{}';
    ELSE
        v_position := array_position(v_source.path, v_tip);
        IF v_position IS NOT NULL THEN
            v_ids := v_source.path[1:v_position];
        ELSIF v_tip BETWEEN 1 AND v_shared THEN
            v_ids := ARRAY(SELECT generate_series(1, v_tip));
        ELSE
            WITH RECURSIVE up AS (
                SELECT nodes.id, nodes.parent_id, 1 AS depth FROM nodes
                 WHERE nodes.tenant_id = p_tenant AND nodes.session_id = p_source AND nodes.id = v_tip
                UNION ALL
                SELECT parent.id, parent.parent_id, up.depth + 1 FROM up
                 CROSS JOIN LATERAL (SELECT nodes.id, nodes.parent_id FROM nodes
                                      WHERE nodes.tenant_id = p_tenant AND nodes.session_id = p_source
                                        AND nodes.id = up.parent_id
                                     OFFSET 0) AS parent
            )
            SELECT array_agg(up.id ORDER BY up.depth DESC), (array_agg(up.parent_id ORDER BY up.depth DESC))[1]
              INTO v_ids, v_top_parent
              FROM up;
            IF v_ids IS NULL THEN
                outcome := 'node_not_found';
                RETURN;
            END IF;
            IF v_top_parent IS NOT NULL THEN
                v_ids := ARRAY(SELECT generate_series(1, v_top_parent)) || v_ids;
            END IF;
        END IF;
    END IF;

    -- 3. The base: a plain source's path nodes themselves; a fork's path starts with its virtual nodes 1..v_kept
    --    (a virtual node's parent is virtual), which are its base's nodes, and goes on with its own, copied below.
    IF v_shared = 0 THEN
        v_kept := cardinality(v_ids);
        v_base_session := p_source;
        v_base_ids := v_ids;
    ELSE
        SELECT count(*) INTO v_kept FROM unnest(v_ids) AS step(id) WHERE step.id <= v_shared;
        v_base_session := v_source.base_session_id;
        v_base_ids := v_source.base_node_ids[1:v_kept];
    END IF;
    IF v_kept = 0 THEN
        v_base_session := NULL;
        v_base_ids := NULL;
    END IF;

    -- 4. The path's usage: its tip's path usage (the sum root -> tip), which also says the tip is there. Not
    --    known (nodes from before path usages): summed over the path's nodes, as sumUsage does.
    IF cardinality(v_ids) = 0 THEN
        v_usage := canopy_usage('{}');
    ELSE
        SELECT canopy_usage_of_vector(tip.path_usage), true INTO v_usage, v_tip_found
          FROM canopy_session_nodes(p_tenant, p_source, ARRAY[v_ids[cardinality(v_ids)]]) AS tip;
        IF v_tip_found IS NULL THEN
            RAISE EXCEPTION 'canopy_fork: node % of the path of session % not found', v_ids[cardinality(v_ids)],
                p_source USING ERRCODE = 'data_corrupted';
        END IF;
    END IF;
    IF v_usage IS NULL THEN
        SELECT count(*)::integer,
               jsonb_build_object(
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
          INTO v_found, v_usage
          FROM (SELECT base.usage FROM nodes AS base
                 WHERE base.tenant_id = p_tenant AND base.session_id = v_base_session AND base.id = ANY (v_base_ids)
                UNION ALL
                SELECT own.usage FROM nodes AS own
                 WHERE own.tenant_id = p_tenant AND own.session_id = p_source AND own.id = ANY (v_ids[v_kept + 1:])
               ) AS path;
        IF v_found <> cardinality(v_ids) THEN
            -- A node of the stored path is missing: the tree is not what the session says. Nothing is kept.
            RAISE EXCEPTION 'canopy_fork: % of % path nodes of session % found', v_found, cardinality(v_ids), p_source
                USING ERRCODE = 'data_corrupted';
        END IF;
    END IF;

    -- 5. The new session: path 1..n, no cursors (each node has one child, which a walk down takes), its base.
    INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata,
                          idle_shutdown_after_ms, path, cursors, head, next_node_id, usage,
                          base_session_id, base_node_ids)
    VALUES (p_tenant, p_id, COALESCE(p_user, p_owner, v_source.user_id),
            CASE WHEN p_title_given THEN p_title ELSE v_source.title END,
            v_source.model, v_source.system, v_source.opts, v_source.tools,
            COALESCE(p_metadata, v_source.metadata)
                || jsonb_build_object('forkedFrom', jsonb_build_object('sessionId', v_source.id, 'nodeId', v_tip)),
            v_source.idle_shutdown_after_ms,
            ARRAY(SELECT generate_series(1, cardinality(v_ids))),
            '{}',
            NULLIF(cardinality(v_ids), 0),
            cardinality(v_ids) + 1,
            v_usage,
            v_base_session, v_base_ids)
    RETURNING * INTO session;

    -- 6. A fork's own nodes on the path, copied after the virtual ones (the index trigger indexes them), each
    --    read by its primary key. Each keeps its path usage: its path prefix is the same.
    copied := 0;
    IF v_kept < cardinality(v_ids) THEN
        INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, path_usage)
        SELECT p_tenant, p_id, (v_kept + step.ord)::integer, NULLIF(v_kept + step.ord - 1, 0)::integer, own.role,
               own.message, own.usage, own.path_usage
          FROM unnest(v_ids[v_kept + 1:]) WITH ORDINALITY AS step(id, ord)
         CROSS JOIN LATERAL (SELECT nodes.role, nodes.message, nodes.usage, nodes.path_usage FROM nodes
                              WHERE nodes.tenant_id = p_tenant AND nodes.session_id = p_source AND nodes.id = step.id
                             OFFSET 0) AS own;
        GET DIAGNOSTICS copied = ROW_COUNT;
    END IF;

    -- 7. The context summaries stored against the path's nodes (context policy summarize), each against the
    --    fork's id of its node (the path's k-th node is the fork's node k): later runs of the fork send them as
    --    the source's runs would, without summarizing those turns again.
    INSERT INTO context_summaries (tenant_id, session_id, through_node_id, text, tokens, model, usage, created_at)
    SELECT p_tenant, p_id, step.ord::integer, summary.text, summary.tokens, summary.model, summary.usage,
           summary.created_at
      FROM context_summaries AS summary
      JOIN unnest(v_ids) WITH ORDINALITY AS step(id, ord) ON step.id = summary.through_node_id
     WHERE summary.tenant_id = p_tenant AND summary.session_id = p_source;
    outcome := 'ok';
END
$function$;
