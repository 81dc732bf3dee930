-- canopy_path_tail(p_tenant uuid, p_session text, p_path integer[], p_tail_tokens integer, p_head_turns integer, p_from_summary boolean, p_timeout_ms integer)
--
-- Defined last by prisma/migrations/20261208000000_node_token_counts/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- What a run of a long conversation sends of its path p_path (root first; NULL: the session's active path as
-- stored, which a run's busy session keeps), as nodes
-- {id, parentId, message, usage, tokens, position, counted?} in path order (position: the node's 1-based place in
-- the path; counted: a tail node's tokens as the walk took them):
-- - the tail: from the head back until the nodes passed hold more than p_tail_tokens tokens, then on back to the
--   start of that turn (a user message that is not a tool result: a turn is never cut in two), or to the path's
--   start;
-- - with p_from_summary, the tail goes back no further than the nearest node of the path a context summary is
--   stored against (that node included: the run sends the summary and the turns after it);
-- - the first p_head_turns turns of the path (the context policy's keepFirstTurns), when the tail does not reach
--   them.
-- With p_tail_tokens NULL, the whole path. A node's tokens are its stored count, or for a node stored without one (imported, copied by a fork before
-- counts were kept) its message's JSON length over four. Each node is read once, by primary key, walking the path
-- from its ends: the rows read are about the rows sent, however long the path.
CREATE OR REPLACE FUNCTION public.canopy_path_tail(p_tenant uuid, p_session text, p_path integer[], p_tail_tokens integer, p_head_turns integer, p_from_summary boolean, p_timeout_ms integer)
 RETURNS json
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    v_path INTEGER[] := p_path;
    v_len INTEGER;
    v_stop INTEGER := 1;      -- the first position the tail may take
    v_from INTEGER;           -- the tail's first position
    v_head INTEGER := 0;      -- the head turns' last position
    v_turns INTEGER := 0;
    v_sum BIGINT := 0;
    v_counted INTEGER;        -- a node's tokens as the walk counts them
    v_node nodes;
    v_start BOOLEAN;
    v_tail json[] := ARRAY[]::json[];
    v_first json[] := ARRAY[]::json[];
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_tail_tokens < 0 THEN
        RAISE EXCEPTION 'canopy_path_tail: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    -- No path given: the session's active path, as stored (a run's, while its session is busy).
    IF v_path IS NULL THEN
        SELECT sessions.path INTO v_path FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session;
    END IF;
    v_len := COALESCE(cardinality(v_path), 0);
    IF v_len = 0 THEN
        RETURN '[]'::json;
    END IF;

    -- 0. No budget (the policy sends everything, or the window is not known): the whole path, in one read — of the
    --    session's nodes in key order (as canopy_load_tree reads a tree) for its own path, by id for a part given.
    IF p_tail_tokens IS NULL THEN
        RETURN (SELECT COALESCE(json_agg(json_build_object('id', path_node.id, 'parentId', path_node.parent_id,
                                                           'message', path_node.message, 'usage', path_node.usage,
                                                           'tokens', path_node.tokens, 'position', step.ord)
                                         ORDER BY step.ord), '[]'::json)
                  FROM unnest(v_path) WITH ORDINALITY AS step(id, ord)
                  JOIN canopy_session_nodes(p_tenant, p_session, CASE WHEN p_path IS NOT NULL THEN v_path END)
                         AS path_node ON path_node.id = step.id);
    END IF;

    -- 1. The nearest summary on the path (node ids grow along a path: the largest is the nearest the head).
    IF p_from_summary THEN
        SELECT COALESCE(array_position(v_path, max(context_summaries.through_node_id)), 1) INTO v_stop
          FROM context_summaries
         WHERE context_summaries.tenant_id = p_tenant AND context_summaries.session_id = p_session
           AND context_summaries.through_node_id = ANY (v_path);
    END IF;

    -- 2. The tail, head first.
    v_from := v_len + 1;
    WHILE v_from > v_stop LOOP
        v_from := v_from - 1;
        SELECT * INTO v_node FROM canopy_session_nodes(p_tenant, p_session, ARRAY[v_path[v_from]]);
        IF NOT FOUND THEN
            CONTINUE;
        END IF;
        v_counted := COALESCE(v_node.tokens, octet_length(v_node.message::text) / 4);
        v_tail := v_tail || json_build_object('id', v_node.id, 'parentId', v_node.parent_id,
                                              'message', v_node.message, 'usage', v_node.usage,
                                              'tokens', v_node.tokens, 'position', v_from,
                                              'counted', v_counted);
        v_sum := v_sum + v_counted;
        v_start := v_node.role = 'user'
                   AND NOT jsonb_path_exists(v_node.message, '$.content[*] ? (@.type == "tool_result")');
        EXIT WHEN v_sum > p_tail_tokens AND v_start;
    END LOOP;

    -- 3. The first turns, up to the tail.
    IF COALESCE(p_head_turns, 0) > 0 THEN
        WHILE v_head + 1 < v_from LOOP
            SELECT * INTO v_node FROM canopy_session_nodes(p_tenant, p_session, ARRAY[v_path[v_head + 1]]);
            IF FOUND AND v_head > 0 AND v_node.role = 'user'
               AND NOT jsonb_path_exists(v_node.message, '$.content[*] ? (@.type == "tool_result")') THEN
                v_turns := v_turns + 1;
                EXIT WHEN v_turns >= p_head_turns;
            END IF;
            v_head := v_head + 1;
            IF FOUND THEN
                v_first := v_first || json_build_object('id', v_node.id, 'parentId', v_node.parent_id,
                                                        'message', v_node.message, 'usage', v_node.usage,
                                                        'tokens', v_node.tokens, 'position', v_head);
            END IF;
        END LOOP;
    END IF;

    RETURN (SELECT COALESCE(json_agg(part.node ORDER BY part.ord), '[]'::json)
              FROM (SELECT node, ord FROM unnest(v_first) WITH ORDINALITY AS f(node, ord)
                    UNION ALL
                    SELECT node, 1000000000 - ord FROM unnest(v_tail) WITH ORDINALITY AS t(node, ord)) AS part);
END
$function$;
