-- A fork's usage in O(1) (issue 15: fork < 20 ms on a 10,000-node path). The fork's session usage is its path's
-- usage, which canopy_fork summed over every path node (10,000 jsonb usages read and taken apart: 30-40 ms of its
-- 55-85). Every node now carries the usage of the path root -> itself, summed in path order, as the ten usage
-- fields in canopy_usage's order (float8[]: inputTokens, outputTokens, cacheReadTokens, cacheWriteTokens,
-- totalTokens, inputCost, outputCost, cacheReadCost, cacheWriteCost, totalCost): a node's is its parent's plus its
-- own, added field by field as canopy_usage_add does, so it equals sumUsage over the path in JavaScript to the last
-- bit (the same additions in the same order). A fork's usage is its tip's.
--
-- Who writes it: canopy_commit and the import (computed down each chain of new nodes from its parent's), a fork's
-- copies and the materialized nodes of forks (copied: a node keeps its path prefix, so its sum). A fork's virtual
-- nodes read their base node's (the same path prefix). NULL means not known: nodes written before this migration
-- that hang under a fork's shared nodes are left so (the backfill below walks each tree from its roots), and so is
-- everything below a NULL; canopy_fork then sums the path as before.
--
-- Also: the nodes of a session are read by primary key whatever the statistics say (canopy_session_nodes and
-- canopy_fork below: no join of unnest(ids) with nodes the planner may turn around), and a fork's cursors are
-- empty (no node of a fresh fork has a second child, and a tree's walk down takes the newest child where no cursor
-- is set): building a 10,000-entry cursor object for each fork cost 10-15 ms.

ALTER TABLE "nodes" ADD COLUMN "path_usage" DOUBLE PRECISION[];

-- Nothing reads nodes by parent (the foreign key whose cascade it served went with 20261209000000_cow_forks), and
-- the planner took it for primary-key lookups: both start (tenant, session), and where the statistics say a session
-- has few nodes (a tenant of many small sessions) the two cost the same, so a lookup by id could scan every node of
-- a big session through it (the parent check of each inserted node: 57 ms for 18,000 nodes). One index fewer to
-- write on each commit too.
DROP INDEX "nodes_children_idx";

-- A usage as the vector of its ten fields, each read as canopy_usage reads it (a missing total the sum of parts).
CREATE FUNCTION "canopy_usage_vector"(u JSONB) RETURNS DOUBLE PRECISION[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT ARRAY[
        COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        COALESCE(canopy_usage_number(u, 'totalTokens'),
                 COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        COALESCE(canopy_usage_number(u, 'totalCost'),
                 COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0))]
$$;

-- A node's path usage: its parent's (NULL: not known, and so is this one) plus its own usage, field by field. One
-- expression (no FROM), so the planner inlines it into the statements calling it, planned once with them (see
-- 20261211000000_usage_functions_inline: a SQL function it cannot inline is planned again on every call).
CREATE FUNCTION "canopy_path_usage"(parent DOUBLE PRECISION[], u JSONB) RETURNS DOUBLE PRECISION[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN cardinality(parent) = 10 THEN ARRAY[
        parent[1] + COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        parent[2] + COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        parent[3] + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        parent[4] + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        parent[5] + COALESCE(canopy_usage_number(u, 'totalTokens'), COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        parent[6] + COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        parent[7] + COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        parent[8] + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        parent[9] + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        parent[10] + COALESCE(canopy_usage_number(u, 'totalCost'), COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0))]
    END
$$;

-- The vector as a stored usage (canopy_usage's object); NULL for NULL.
CREATE FUNCTION "canopy_usage_of_vector"(v DOUBLE PRECISION[]) RETURNS JSONB
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN v IS NOT NULL THEN
        jsonb_build_object('inputTokens', v[1], 'outputTokens', v[2], 'cacheReadTokens', v[3],
                           'cacheWriteTokens', v[4], 'totalTokens', v[5], 'inputCost', v[6], 'outputCost', v[7],
                           'cacheReadCost', v[8], 'cacheWriteCost', v[9], 'totalCost', v[10])
    END
$$;

-- The nodes there are, across tenants (this transaction only: row-level security is forced, even for the owner
-- running the migration): each tree walked down from its roots (a root's path usage is its own usage). Nodes under a
-- fork's shared nodes stay NULL (see above).
SELECT set_config('canopy.admin', 'on', true);
WITH RECURSIVE walk AS (
    SELECT nodes.tenant_id, nodes.session_id, nodes.id, canopy_usage_vector(nodes.usage) AS path_usage
      FROM nodes
     WHERE nodes.parent_id IS NULL
    UNION ALL
    SELECT child.tenant_id, child.session_id, child.id, canopy_path_usage(walk.path_usage, child.usage)
      FROM walk
      JOIN nodes AS child ON child.tenant_id = walk.tenant_id AND child.session_id = walk.session_id
                         AND child.parent_id = walk.id
)
UPDATE nodes SET path_usage = walk.path_usage
  FROM walk
 WHERE nodes.tenant_id = walk.tenant_id AND nodes.session_id = walk.session_id AND nodes.id = walk.id;
SELECT set_config('canopy.admin', '', true);

-- The nodes of a session, real and virtual (as in 20261209000000_cow_forks), now with their path usages, and read
-- by primary key whatever the statistics say. Joined with unnest(p_ids), the wanted nodes were a join the planner
-- was free to turn around: with statistics from many small sessions (a tenant's 20,000 ten-node sessions) it
-- estimated one row per session and scanned all the nodes of a 10,000-node session for each wanted id (a fork's tip:
-- 12 ms instead of 0.05; a run's path, a commit's parents the same way). Wanted real nodes are now an index
-- condition (id = ANY (p_ids), each id once), wanted virtual ones one primary-key probe each (a LATERAL the
-- planner may not pull up: OFFSET 0).
CREATE OR REPLACE FUNCTION "canopy_session_nodes"(p_tenant UUID, p_session TEXT, p_ids INTEGER[] DEFAULT NULL)
    RETURNS SETOF "nodes"
    LANGUAGE sql STABLE
    AS $function$
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
    UNION ALL
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NOT NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
       AND nodes.id = ANY (p_ids)
    UNION ALL
    SELECT p_tenant, p_session, shared.id, NULLIF(shared.id - 1, 0), source.role, source.message, source.usage,
           source.created_at, source.path_usage
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


CREATE OR REPLACE FUNCTION public.canopy_materialize_forks()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF EXISTS (SELECT 1 FROM sessions WHERE sessions.tenant_id = OLD.tenant_id AND sessions.base_session_id = OLD.id)
       AND EXISTS (SELECT 1 FROM tenants WHERE tenants.id = OLD.tenant_id) THEN
        INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, created_at, path_usage)
        SELECT fork.tenant_id, fork.id, step.ord::integer, NULLIF(step.ord::integer - 1, 0), source.role,
               source.message, source.usage, source.created_at, source.path_usage
          FROM sessions AS fork
         CROSS JOIN LATERAL unnest(fork.base_node_ids) WITH ORDINALITY AS step(node_id, ord)
          JOIN nodes AS source ON source.tenant_id = OLD.tenant_id AND source.session_id = OLD.id
                              AND source.id = step.node_id
         WHERE fork.tenant_id = OLD.tenant_id AND fork.base_session_id = OLD.id;
    END IF;
    RETURN OLD;
END
$function$;


CREATE OR REPLACE FUNCTION public.canopy_commit(p_tenant uuid, p_user text, p_session text, p_run uuid, p_nodes jsonb, p_position jsonb, p_next_node_id integer, p_usage jsonb, p_finish jsonb, p_timeout_ms integer, p_title text, OUT outcome text, OUT steer jsonb, OUT titled boolean, OUT queued boolean)
 RETURNS record
 LANGUAGE plpgsql
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
    INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, path_usage)
    WITH RECURSIVE added AS (
        SELECT n.id, n."parentId" AS parent_id, n.message, n.usage
          FROM jsonb_to_recordset(p_nodes) AS n(id INTEGER, "parentId" INTEGER, message JSONB, usage JSONB)
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
           down.usage, down.path_usage
      FROM down;

    -- 3. The run. A finishing commit reads the steer staged on it (after the lock above: every stager locks the
    --    session first, so none staged before it is missed) and takes it: cleared here, handed back below.
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
           usage = CASE WHEN v_ends THEN canopy_usage(p_finish) ELSE runs.usage END,
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
    outcome := 'ok';
END
$function$;

