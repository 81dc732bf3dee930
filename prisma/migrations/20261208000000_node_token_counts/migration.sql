-- Each node's token count (its message as the session's model counts it, kept when the node is committed), so a run
-- of a long conversation counts only what is new and reads only what it will send (canopy_path_tail). NULL for a node
-- stored without one: it is estimated from its message's length where a count is needed.
ALTER TABLE public.nodes ADD COLUMN tokens integer;

-- canopy_load_run takes p_max_nodes: its old signature goes first (one function per name).
DROP FUNCTION public.canopy_load_run(uuid, text, text, uuid, integer);


-- SessionStore.commit: appends the nodes p_nodes ([{id, parentId, message, usage, tokens}], the role taken from
-- the message, tokens the message's count for the session's model), moves the position to p_position ({path,
-- cursors, head}, and context_meter: the token meter of the new head, kept when the run ends here), sets next_node_id, adds p_usage to the
-- session's usage and clears the run's rollback point and pending state, fenced on p_run still being the
-- session's active run (and the session being p_user's when p_user is given). With p_finish (the run's usage so
-- far), also records that usage on the run (settled into usage_daily by its trigger) and ends the run (completed)
-- and sets the session idle, unless a prompt was steered onto the run: then the run goes on, its steer cleared
-- and handed back.
-- outcome: 'fenced' (nothing written) or 'ok'; steer: the steered prompt, when a finishing commit found one.
CREATE OR REPLACE FUNCTION public.canopy_commit(p_tenant uuid, p_user text, p_session text, p_run uuid, p_nodes jsonb, p_position jsonb, p_next_node_id integer, p_usage jsonb, p_finish jsonb, p_timeout_ms integer, p_title text, OUT outcome text, OUT steer jsonb, OUT titled boolean, OUT queued boolean)
 RETURNS record
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    v_position sessions := jsonb_populate_record(NULL::sessions, p_position);
    v_total JSONB;    -- the session's usage before this commit
    v_title TEXT;     -- the session's title before this commit
    v_ends BOOLEAN;   -- a finishing commit with no steer: the run ends
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_run IS NULL OR jsonb_typeof(p_nodes) IS DISTINCT FROM 'array'
       OR jsonb_typeof(p_position) IS DISTINCT FROM 'object' OR p_next_node_id IS NULL OR p_usage IS NULL THEN
        RAISE EXCEPTION 'canopy_commit: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. The fence, which also locks the session and reads its usage total. Every writer of a run locks its
    --    session first, so from here on the run row is ours too.
    SELECT sessions.usage, sessions.title INTO v_total, v_title
      FROM sessions
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
       AND (p_user IS NULL OR sessions.user_id = p_user)
       AND sessions.active_run_id = p_run
       FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'fenced';
        titled := false;
        queued := false;
        RETURN;
    END IF;

    -- 2. The turn's nodes. Parents inserted by the same statement satisfy the foreign key, checked at its end.
    --    Each node's path usage is its parent's plus its own, down each chain from a parent already stored (read
    --    through canopy_session_nodes: a fork's first own node hangs under a shared one).
    INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, path_usage, tokens)
    WITH RECURSIVE added AS (
        SELECT n.id, n."parentId" AS parent_id, n.message, n.usage, n.tokens
          FROM jsonb_to_recordset(p_nodes)
            AS n(id INTEGER, "parentId" INTEGER, message JSONB, usage JSONB, tokens INTEGER)
    ), down AS (
        SELECT added.*, CASE WHEN added.parent_id IS NULL THEN canopy_usage_vector(added.usage)
                             ELSE canopy_path_usage(parent.path_usage, added.usage) END AS path_usage
          FROM added
          LEFT JOIN LATERAL canopy_session_nodes(p_tenant, p_session, ARRAY[added.parent_id]) AS parent ON true
         WHERE NOT EXISTS (SELECT 1 FROM added AS above WHERE above.id = added.parent_id)
        UNION ALL
        SELECT added.*, canopy_path_usage(down.path_usage, added.usage)
          FROM down JOIN added ON added.parent_id = down.id
    )
    SELECT p_tenant, p_session, down.id, down.parent_id, (down.message ->> 'role')::message_role, down.message,
           down.usage, down.path_usage, down.tokens
      FROM down;

    -- 3. The run. A finishing commit reads the steer staged on it (after the lock above: every stager locks the
    --    session first, so none staged before it is missed) and takes it: cleared here, handed back below. It
    --    records the run's usage so far either way: a turn's usage is settled when the turn ends, so a run that
    --    takes steered prompts does not hide its earlier turns from the quotas until it ends.
    IF p_finish IS NOT NULL THEN
        SELECT runs.steer INTO steer FROM runs WHERE runs.tenant_id = p_tenant AND runs.id = p_run;
    END IF;
    v_ends := p_finish IS NOT NULL AND steer IS NULL;
    -- An untitled session is titled by the run that ends here, when the caller names a title (a rename made
    -- meanwhile wins: the title read under the lock above is the latest).
    titled := v_ends AND v_title IS NULL AND p_title IS NOT NULL;
    UPDATE runs
       SET rollback = NULL,
           pending = NULL,
           steer = CASE WHEN p_finish IS NULL THEN runs.steer END,
           -- A taken steer is what the run now answers: a worker taking the run over re-runs it from here.
           input = COALESCE(canopy_commit.steer, runs.input),
           status = CASE WHEN v_ends THEN 'completed' ELSE runs.status END,
           usage = CASE WHEN p_finish IS NOT NULL THEN canopy_usage(p_finish) ELSE runs.usage END,
           finished_at = CASE WHEN v_ends THEN now() ELSE runs.finished_at END,
           updated_at = now()
     WHERE runs.tenant_id = p_tenant AND runs.id = p_run;

    -- 4. The session: position, next node id, usage total; idle and free when the run ended.
    UPDATE sessions
       SET path = v_position.path,
           cursors = v_position.cursors,
           head = v_position.head,
           next_node_id = p_next_node_id,
           usage = canopy_usage_add(v_total, p_usage),
           title = CASE WHEN titled THEN p_title ELSE sessions.title END,
           status = CASE WHEN v_ends THEN 'idle' ELSE sessions.status END,
           active_run_id = CASE WHEN v_ends THEN NULL ELSE sessions.active_run_id END,
           -- The token meter of the new head, when the caller counted it (p_position's context_meter).
           context_meter = CASE WHEN v_ends AND v_position.context_meter IS NOT NULL
                                THEN v_position.context_meter ELSE sessions.context_meter END,
           updated_at = now()
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session;

    -- 5. Whether prompts wait in the session's queue (double texting) for the run that ended: the caller starts
    --    the next only then, instead of reading the queue after every run. Read after the lock above, so a prompt
    --    queued before it is seen here, and one queued after it waited for this transaction (its foreign key
    --    locks the session row) and finds the session idle when it tries to start itself.
    queued := v_ends AND EXISTS (SELECT 1 FROM queued_prompts
                                  WHERE queued_prompts.tenant_id = p_tenant AND queued_prompts.session_id = p_session);
    outcome := 'ok';
END
$function$;

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

-- The nodes of a session, real and virtual (as in 20261209000000_cow_forks), now with their path usages, and read
-- by primary key whatever the statistics say. Joined with unnest(p_ids), the wanted nodes were a join the planner
-- was free to turn around: with statistics from many small sessions (a tenant's 20,000 ten-node sessions) it
-- estimated one row per session and scanned all the nodes of a 10,000-node session for each wanted id (a fork's tip:
-- 12 ms instead of 0.05; a run's path, a commit's parents the same way). Wanted real nodes are now an index
-- condition (id = ANY (p_ids), each id once), wanted virtual ones one primary-key probe each (a LATERAL the
-- planner may not pull up: OFFSET 0).
CREATE OR REPLACE FUNCTION public.canopy_session_nodes(p_tenant uuid, p_session text, p_ids integer[] DEFAULT NULL::integer[])
 RETURNS SETOF nodes
 LANGUAGE sql
 STABLE
AS $function$
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
    UNION ALL
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NOT NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
       AND nodes.id = ANY (p_ids)
    UNION ALL
    SELECT p_tenant, p_session, shared.id, NULLIF(shared.id - 1, 0), source.role, source.message, source.usage,
           source.created_at, source.path_usage, source.tokens
      FROM sessions
     CROSS JOIN LATERAL (
            SELECT step.ord::integer AS id, step.node_id
              FROM unnest(sessions.base_node_ids) WITH ORDINALITY AS step(node_id, ord)
             WHERE p_ids IS NULL
            UNION ALL
            SELECT wanted.id, sessions.base_node_ids[wanted.id]
              FROM unnest(p_ids) AS wanted(id)
             WHERE wanted.id BETWEEN 1 AND cardinality(sessions.base_node_ids)
           ) AS shared
     CROSS JOIN LATERAL (
            SELECT base.* FROM nodes AS base
             WHERE base.tenant_id = p_tenant AND base.session_id = sessions.base_session_id
               AND base.id = shared.node_id
            OFFSET 0
           ) AS source
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session AND sessions.base_session_id IS NOT NULL
$function$;
