-- Copy-on-write forks (issue 15: a fork costs O(path length), target < 20 ms on a 10,000-node path). A fork no
-- longer copies the source's path: it records a BASE, the session it shares nodes with and those nodes' ids in
-- path order. The fork's node k (k <= cardinality(base_node_ids)) IS the base session's node base_node_ids[k],
-- renumbered: id k, parent k - 1 (the root's NULL), the base node's role, message, usage and created_at. Those
-- are the fork's VIRTUAL nodes; the nodes it grows later are real rows of `nodes` with ids above them, the first
-- one's parent virtual.
--
-- Flat: a base is always a session's REAL nodes. Forking a fork maps the part of the path inside the source's
-- base to that base's session, and copies the rest (the source fork's own nodes) as real rows.
--
-- What keeps it whole:
-- * canopy_session_nodes(tenant, session[, ids]) is THE read of a session's nodes, real and virtual: every reader
--   (tree load, run load, export, search snippets) goes through it.
-- * The foreign key nodes(parent) -> nodes cannot hold for a parent that is virtual; a statement trigger checks
--   every inserted node's parent instead (a real node of its session, or one of its virtual ones), with the same
--   SQLSTATE as the key it replaces.
-- * Deleting a base session materializes its forks first, in the deleting statement: a BEFORE DELETE row trigger
--   copies the shared nodes into each fork as real rows (the search index trigger indexes them), an AFTER
--   statement trigger then clears the forks' bases (a BEFORE trigger may not update rows its statement may still
--   delete). Every road that deletes sessions (one, many, the retention sweep) takes this path; a tenant's
--   deletion (its sessions all go) skips it.
-- * canopy_fork locks its source (and the source's base) FOR KEY SHARE, which only a deletion waits for: no fork
--   is created on a base whose deletion has already materialized its forks.
-- * Search matches a base session's node_search rows also for the forks that share them (session-search.ts):
--   sessions_base_idx finds a base's forks.

ALTER TABLE "sessions"
    ADD COLUMN "base_session_id" TEXT,
    ADD COLUMN "base_node_ids" INTEGER[],
    ADD CONSTRAINT "sessions_base_check" CHECK (
        ("base_session_id" IS NULL AND "base_node_ids" IS NULL)
        OR ("base_session_id" IS NOT NULL AND cardinality("base_node_ids") >= 1
            AND "base_session_id" <> "id" AND cardinality("base_node_ids") < "next_node_id"));

CREATE INDEX "sessions_base_idx" ON "sessions" ("tenant_id", "base_session_id") WHERE "base_session_id" IS NOT NULL;

-- The nodes of a session, real and virtual; all of them, or those of p_ids (ids not found are left out). One SQL
-- statement that the planner inlines into the caller's: `p_ids IS NULL` picks the arms at plan or run time, each
-- arm reading by primary key (a wanted virtual node is one lookup, base_node_ids[id]).
CREATE FUNCTION "canopy_session_nodes"(p_tenant UUID, p_session TEXT, p_ids INTEGER[] DEFAULT NULL)
    RETURNS SETOF "nodes"
    LANGUAGE sql STABLE
    AS $$
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
    UNION ALL
    SELECT nodes.* FROM unnest(p_ids) AS wanted(id)
      JOIN nodes ON nodes.tenant_id = p_tenant AND nodes.session_id = p_session AND nodes.id = wanted.id
    UNION ALL
    SELECT p_tenant, p_session, shared.id, NULLIF(shared.id - 1, 0), source.role, source.message, source.usage,
           source.created_at
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
      JOIN nodes AS source ON source.tenant_id = p_tenant AND source.session_id = sessions.base_session_id
                          AND source.id = shared.node_id
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session AND sessions.base_session_id IS NOT NULL
$$;

-- A node's parent: a real node of its session, or one of the session's virtual nodes.
ALTER TABLE "nodes" DROP CONSTRAINT "nodes_tenant_id_session_id_parent_id_fkey";

CREATE FUNCTION "canopy_check_parents"() RETURNS TRIGGER
    LANGUAGE plpgsql
    AS $$
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
$$;

CREATE TRIGGER "nodes_parent_exists" AFTER INSERT ON "nodes"
    REFERENCING NEW TABLE AS added_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION "canopy_check_parents"();

-- Before a session is deleted, its forks get their shared nodes as real rows (same ids, parents, messages, usage
-- and times). Not when its tenant is being deleted: the forks go too.
CREATE FUNCTION "canopy_materialize_forks"() RETURNS TRIGGER
    LANGUAGE plpgsql
    AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM sessions WHERE sessions.tenant_id = OLD.tenant_id AND sessions.base_session_id = OLD.id)
       AND EXISTS (SELECT 1 FROM tenants WHERE tenants.id = OLD.tenant_id) THEN
        INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, created_at)
        SELECT fork.tenant_id, fork.id, step.ord::integer, NULLIF(step.ord::integer - 1, 0), source.role,
               source.message, source.usage, source.created_at
          FROM sessions AS fork
         CROSS JOIN LATERAL unnest(fork.base_node_ids) WITH ORDINALITY AS step(node_id, ord)
          JOIN nodes AS source ON source.tenant_id = OLD.tenant_id AND source.session_id = OLD.id
                              AND source.id = step.node_id
         WHERE fork.tenant_id = OLD.tenant_id AND fork.base_session_id = OLD.id;
    END IF;
    RETURN OLD;
END
$$;

CREATE FUNCTION "canopy_forget_bases"() RETURNS TRIGGER
    LANGUAGE plpgsql
    AS $$
BEGIN
    UPDATE sessions AS fork SET base_session_id = NULL, base_node_ids = NULL
      FROM deleted_sessions AS deleted
     WHERE fork.tenant_id = deleted.tenant_id AND fork.base_session_id = deleted.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER "sessions_materialize_forks" BEFORE DELETE ON "sessions"
    FOR EACH ROW EXECUTE FUNCTION "canopy_materialize_forks"();

CREATE TRIGGER "sessions_forget_bases" AFTER DELETE ON "sessions"
    REFERENCING OLD TABLE AS deleted_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION "canopy_forget_bases"();

-- The run's path nodes, virtual ones included.
CREATE OR REPLACE FUNCTION "canopy_load_run"(p_tenant uuid, p_user text, p_session text, p_run uuid,
                                              p_timeout_ms integer,
                                              OUT session sessions, OUT run runs, OUT path_nodes json)
    RETURNS record
    LANGUAGE plpgsql
    AS $$
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
    SELECT COALESCE(json_agg(json_build_object('id', path_node.id, 'parentId', path_node.parent_id,
                                               'message', path_node.message, 'usage', path_node.usage)
                             ORDER BY path_node.id), '[]')
      INTO path_nodes
      FROM canopy_session_nodes(p_tenant, p_session, session.path) AS path_node;
END
$$;

-- Fork: the new session shares the path's nodes with their session instead of copying them.
CREATE OR REPLACE FUNCTION "canopy_fork"(p_tenant uuid, p_user text, p_source text, p_node integer, p_id text,
                                          p_title text, p_title_given boolean, p_metadata jsonb, p_owner text,
                                          p_timeout_ms integer,
                                          OUT outcome text, OUT session sessions, OUT copied integer)
    RETURNS record
    LANGUAGE plpgsql
    AS $$
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
                SELECT nodes.id, nodes.parent_id, up.depth + 1 FROM up JOIN nodes
                    ON nodes.tenant_id = p_tenant AND nodes.session_id = p_source AND nodes.id = up.parent_id
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

    -- 4. The path's usage (summed as sumUsage does), read with the path's nodes.
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
            SELECT own.usage FROM unnest(v_ids[v_kept + 1:]) AS step(id)
              JOIN nodes AS own ON own.tenant_id = p_tenant AND own.session_id = p_source AND own.id = step.id
           ) AS path;
    IF v_found <> cardinality(v_ids) THEN
        -- A node of the stored path is missing: the tree is not what the session says. Nothing is kept.
        RAISE EXCEPTION 'canopy_fork: % of % path nodes of session % found', v_found, cardinality(v_ids), p_source
            USING ERRCODE = 'data_corrupted';
    END IF;

    -- 5. The new session: path 1..n, each node's cursor its only child, its base.
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
            COALESCE((SELECT jsonb_object_agg((g - 1)::text, g) FROM generate_series(2, cardinality(v_ids)) g),
                     '{}'),
            NULLIF(cardinality(v_ids), 0),
            cardinality(v_ids) + 1,
            v_usage,
            v_base_session, v_base_ids)
    RETURNING * INTO session;

    -- 6. A fork's own nodes on the path, copied after the virtual ones (the index trigger indexes them).
    INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
    SELECT p_tenant, p_id, (v_kept + step.ord)::integer, NULLIF(v_kept + step.ord - 1, 0)::integer, own.role,
           own.message, own.usage
      FROM unnest(v_ids[v_kept + 1:]) WITH ORDINALITY AS step(id, ord)
      JOIN nodes AS own ON own.tenant_id = p_tenant AND own.session_id = p_source AND own.id = step.id;
    GET DIAGNOSTICS copied = ROW_COUNT;
    outcome := 'ok';
END
$$;
