-- Canopy's schema as one baseline: the tables, types, indexes, triggers and row-level security policies, and the
-- canopy_* SQL functions exactly as prisma/functions/<name>.sql holds them (those files are the functions' source;
-- prisma/functions/README.md says how a later migration changes one). Objects are created in dependency order;
-- function bodies are checked when they first run, not here (check_function_bodies off), as pg_dump restores them.

SET check_function_bodies = false;

CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public;

CREATE TYPE public.message_role AS ENUM (
    'user',
    'assistant'
);

CREATE TYPE public.run_kind AS ENUM (
    'prompt',
    'branch',
    'resume'
);

CREATE TYPE public.run_status AS ENUM (
    'queued',
    'running',
    'paused',
    'completed',
    'cancelled',
    'error'
);

CREATE TYPE public.session_status AS ENUM (
    'idle',
    'busy',
    'paused'
);

-- The actor a transaction declared (base64 of a JSON object {actor, requestId}), or the system's.
CREATE OR REPLACE FUNCTION public.canopy_audit_context()
 RETURNS jsonb
 LANGUAGE plpgsql
 STABLE
AS $function$
DECLARE
    v TEXT := NULLIF(current_setting('canopy.audit', true), '');
BEGIN
    IF v IS NULL THEN
        RETURN jsonb_build_object('actor', jsonb_build_object('type', 'system'), 'requestId', NULL);
    END IF;
    RETURN convert_from(decode(v, 'base64'), 'UTF8')::jsonb;
END $function$;

CREATE OR REPLACE FUNCTION public.canopy_check_parents()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
$function$;

-- SessionStore.commit: appends the nodes p_nodes ([{id, parentId, message, usage}], the role taken from the
-- message), moves the position to p_position ({path, cursors, head}), sets next_node_id, adds p_usage to the
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

CREATE TABLE public.sessions (
    tenant_id uuid NOT NULL,
    id text NOT NULL,
    user_id text,
    title text,
    model text NOT NULL,
    system text,
    opts jsonb DEFAULT '{}'::jsonb NOT NULL,
    tools jsonb DEFAULT '[]'::jsonb NOT NULL,
    metadata jsonb DEFAULT '{}'::jsonb NOT NULL,
    status public.session_status DEFAULT 'idle'::public.session_status NOT NULL,
    path integer[] DEFAULT ARRAY[]::integer[] NOT NULL,
    cursors jsonb DEFAULT '{}'::jsonb NOT NULL,
    head integer,
    next_node_id integer DEFAULT 1 NOT NULL,
    usage jsonb DEFAULT '{}'::jsonb NOT NULL,
    idle_shutdown_after_ms integer,
    active_run_id uuid,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    pinned boolean DEFAULT false NOT NULL,
    base_session_id text,
    base_node_ids integer[],
    import_token text,
    import_expires_at timestamp(3) with time zone,
    CONSTRAINT sessions_base_check CHECK ((((base_session_id IS NULL) AND (base_node_ids IS NULL)) OR ((base_session_id IS NOT NULL) AND (cardinality(base_node_ids) >= 1) AND (base_session_id <> id) AND (cardinality(base_node_ids) < next_node_id)))),
    CONSTRAINT sessions_head_check CHECK (((head IS NULL) OR (head < next_node_id))),
    CONSTRAINT sessions_id_check CHECK (((length(id) >= 1) AND (length(id) <= 128))),
    CONSTRAINT sessions_next_node_id_check CHECK ((next_node_id >= 1))
);

ALTER TABLE ONLY public.sessions FORCE ROW LEVEL SECURITY;

CREATE OR REPLACE FUNCTION public.canopy_create_session(p_tenant uuid, p_id text, p_user text, p_title text, p_model text, p_system text, p_opts jsonb, p_tools jsonb, p_metadata jsonb, p_idle_shutdown_after_ms integer, p_timeout_ms integer)
 RETURNS SETOF sessions
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    RETURN QUERY
    INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata, idle_shutdown_after_ms)
    VALUES (p_tenant, p_id, p_user, p_title, p_model, p_system, p_opts, p_tools, p_metadata, p_idle_shutdown_after_ms)
    ON CONFLICT (tenant_id, id) DO NOTHING
    RETURNING *;
END
$function$;

-- Row-level security. The app sets these per transaction (set_config(..., true)):
--   canopy.tenant_id  the tenant a transaction acts for;
--   canopy.admin      'on' only for the few named cross-tenant operations (admin routes, recovery sweeps);
--   canopy.key_hash   the hash of the API key being authenticated (lets that one key row be read).
-- A transaction that set none of them sees and writes nothing. FORCE applies the policies to the table owner too;
-- only a superuser or a BYPASSRLS role could skip them, and the app's role is neither.
CREATE OR REPLACE FUNCTION public.canopy_current_tenant()
 RETURNS uuid
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT NULLIF(current_setting('canopy.tenant_id', true), '')::uuid $function$;

-- Declares the tenant a hot-path function acts for and bounds its lock waits by the store's transaction
-- deadline, both transaction-local (set_config(..., true)): in autocommit, the calling statement only (called
-- inside an explicit transaction, they would stay for the rest of it, like withTenantSql's own settings).
--
-- Why lock_timeout and not the statement/idle timeouts of the BEGIN road: statement_timeout is armed when a
-- statement starts, so setting it inside the statement bounds only the next one, and one statement has no idle
-- time for idle_in_transaction_session_timeout to bound. What can hold one of these short statements is a row
-- lock, and lock_timeout applies to every lock wait that follows it (SQLSTATE 55P03; the store maps it to
-- unavailable like its other deadlines).
CREATE OR REPLACE FUNCTION public.canopy_enter(p_tenant uuid, p_timeout_ms integer)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF p_tenant IS NULL THEN
        RAISE EXCEPTION 'canopy: a tenant id is required' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF p_timeout_ms IS NULL OR p_timeout_ms < 1 THEN
        RAISE EXCEPTION 'canopy: the timeout must be at least 1 ms, not %', p_timeout_ms
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('canopy.tenant_id', p_tenant::text, true),
            set_config('lock_timeout', p_timeout_ms::text, true);
END
$function$;

CREATE OR REPLACE FUNCTION public.canopy_forget_bases()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE sessions AS fork SET base_session_id = NULL, base_node_ids = NULL
      FROM deleted_sessions AS deleted
     WHERE fork.tenant_id = deleted.tenant_id AND fork.base_session_id = deleted.id;
    RETURN NULL;
END
$function$;

-- Fork: the new session shares the path's nodes with their session instead of copying them.
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

-- Indexes the nodes one INSERT statement added (a commit's turn, a fork's path, an import's tree) in one
-- statement, each node's vector computed once; nodes without text get no row.
CREATE OR REPLACE FUNCTION public.canopy_index_nodes()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO node_search (tenant_id, session_id, node_id, search)
    SELECT indexed.tenant_id, indexed.session_id, indexed.id, indexed.search
      FROM (SELECT added.tenant_id, added.session_id, added.id, canopy_search_vector(added.message) AS search
              FROM added_nodes AS added
            OFFSET 0) AS indexed
     WHERE indexed.search <> ''::tsvector;
    RETURN NULL;
END
$function$;

CREATE OR REPLACE FUNCTION public.canopy_is_admin()
 RETURNS boolean
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT coalesce(current_setting('canopy.admin', true), '') = 'on' $function$;

CREATE TABLE public.runs (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    kind public.run_kind NOT NULL,
    status public.run_status DEFAULT 'queued'::public.run_status NOT NULL,
    input jsonb DEFAULT '{}'::jsonb NOT NULL,
    pending jsonb,
    error jsonb,
    usage jsonb DEFAULT '{}'::jsonb NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    started_at timestamp(3) with time zone,
    finished_at timestamp(3) with time zone,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    steer jsonb,
    rollback jsonb,
    actor jsonb
);

ALTER TABLE ONLY public.runs FORCE ROW LEVEL SECURITY;

-- The run's path nodes, virtual ones included.
CREATE OR REPLACE FUNCTION public.canopy_load_run(p_tenant uuid, p_user text, p_session text, p_run uuid, p_timeout_ms integer, OUT session sessions, OUT run runs, OUT path_nodes json)
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
    SELECT COALESCE(json_agg(json_build_object('id', path_node.id, 'parentId', path_node.parent_id,
                                               'message', path_node.message, 'usage', path_node.usage)
                             ORDER BY path_node.id), '[]')
      INTO path_nodes
      FROM canopy_session_nodes(p_tenant, p_session, session.path) AS path_node;
END
$function$;

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

-- Before a session is deleted, its forks get their shared nodes as real rows (same ids, parents, messages, usage
-- and times). Not when its tenant is being deleted: the forks go too.
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

-- The searchable text of a message: its text blocks in order, blank-line separated, cut at 100,000 characters
-- (a tsvector holds at most 1 MB; 100,000 characters of the worst text stay well under it, so no commit can fail
-- for being too long to index).
CREATE OR REPLACE FUNCTION public.canopy_message_text(message jsonb)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT left(COALESCE(string_agg(block.value ->> 'text', E'\n\n' ORDER BY block.ordinality), ''), 100000)
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(message -> 'content') = 'array'
                                     THEN message -> 'content' ELSE '[]'::jsonb END) WITH ORDINALITY AS block
     WHERE block.value ->> 'type' = 'text' AND jsonb_typeof(block.value -> 'text') = 'string'
$function$;

-- A node's path usage: its parent's (NULL: not known, and so is this one) plus its own usage, field by field. One
-- expression (no FROM), so the planner inlines it into the statements calling it, planned once with them (see
-- 20261211000000_usage_functions_inline: a SQL function it cannot inline is planned again on every call).
CREATE OR REPLACE FUNCTION public.canopy_path_usage(parent double precision[], u jsonb)
 RETURNS double precision[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
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
$function$;

-- Usage rolled up per tenant, UTC day (of the run's start) and session: a run counts when it is created (runs),
-- and its tokens and cost are settled whenever its recorded usage changes (a turn's end, a pause, the run's end),
-- by what changed, in the transaction that wrote it. So usage_daily always holds the sum of the runs' recorded
-- usage, whether they ended or not.
CREATE OR REPLACE FUNCTION public.canopy_runs_usage()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_runs INTEGER := 0;
    v_usage JSONB := coalesce(NEW.usage, '{}'::jsonb);
    v_before JSONB := '{}'::jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        v_runs := 1;
    ELSIF NEW.usage IS DISTINCT FROM OLD.usage THEN
        v_before := coalesce(OLD.usage, '{}'::jsonb);
    ELSE
        RETURN NULL;
    END IF;
    INSERT INTO usage_daily AS u (tenant_id, day, session_id, user_id, model, runs, input_tokens, output_tokens,
                                  total_tokens, total_cost)
    SELECT NEW.tenant_id, (NEW.created_at AT TIME ZONE 'UTC')::date, NEW.session_id, s.user_id, s.model, v_runs,
           coalesce((v_usage->>'inputTokens')::float8, 0) - coalesce((v_before->>'inputTokens')::float8, 0),
           coalesce((v_usage->>'outputTokens')::float8, 0) - coalesce((v_before->>'outputTokens')::float8, 0),
           coalesce((v_usage->>'totalTokens')::float8, 0) - coalesce((v_before->>'totalTokens')::float8, 0),
           coalesce((v_usage->>'totalCost')::float8, 0) - coalesce((v_before->>'totalCost')::float8, 0)
      FROM (SELECT 1) one
      LEFT JOIN sessions s ON s.tenant_id = NEW.tenant_id AND s.id = NEW.session_id
    ON CONFLICT (tenant_id, day, session_id) DO UPDATE
       SET runs = u.runs + EXCLUDED.runs,
           input_tokens = u.input_tokens + EXCLUDED.input_tokens,
           output_tokens = u.output_tokens + EXCLUDED.output_tokens,
           total_tokens = u.total_tokens + EXCLUDED.total_tokens,
           total_cost = u.total_cost + EXCLUDED.total_cost,
           user_id = coalesce(EXCLUDED.user_id, u.user_id),
           model = coalesce(EXCLUDED.model, u.model);
    RETURN NULL;
END $function$;

CREATE OR REPLACE FUNCTION public.canopy_runs_webhook()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_type TEXT;
BEGIN
    IF NEW.status IS NOT DISTINCT FROM OLD.status THEN
        RETURN NULL;
    END IF;
    v_type := CASE NEW.status
        WHEN 'completed' THEN 'run.completed'
        WHEN 'error' THEN 'run.failed'
        WHEN 'cancelled' THEN 'run.cancelled'
        WHEN 'paused' THEN 'run.paused'
        ELSE NULL END;
    IF v_type IS NOT NULL THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, v_type, jsonb_build_object(
            'runId', NEW.id, 'sessionId', NEW.session_id, 'kind', NEW.kind, 'status', NEW.status,
            'error', NEW.error, 'usage', NEW.usage,
            'finishedAt', to_char(NEW.finished_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
    END IF;
    RETURN NULL;
END $function$;

-- The query of the current transaction's search (set_config('canopy.search', <tsquery text>, true)); NULL when
-- none is set, and then node_search shows nothing.
CREATE OR REPLACE FUNCTION public.canopy_search_query()
 RETURNS tsquery
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$ SELECT NULLIF(current_setting('canopy.search', true), '')::tsquery $function$;

-- The words of a message, as every tsvector and query reads them: configuration `simple` (lower-cased words, no
-- stemming and no stop words), the same for every language a tenant's users write in. The text blocks' strings go
-- to to_tsvector as a jsonb array (C code throughout: a copied path of thousands of nodes is indexed in
-- milliseconds); a message too large for that to stay under a tsvector's 1 MB takes the cut text instead.
CREATE OR REPLACE FUNCTION public.canopy_search_vector(message jsonb)
 RETURNS tsvector
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT CASE WHEN pg_column_size(message) <= 65536
                THEN to_tsvector('simple'::regconfig,
                                 jsonb_path_query_array(message, '$.content[*] ? (@.type == "text").text'))
                ELSE to_tsvector('simple'::regconfig, canopy_message_text(message)) END
$function$;

CREATE TABLE public.nodes (
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    id integer NOT NULL,
    parent_id integer,
    role public.message_role NOT NULL,
    message jsonb NOT NULL,
    usage jsonb,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    path_usage double precision[],
    CONSTRAINT nodes_id_check CHECK ((id >= 1)),
    CONSTRAINT nodes_parent_check CHECK (((parent_id IS NULL) OR (parent_id < id)))
);

ALTER TABLE ONLY public.nodes FORCE ROW LEVEL SECURITY;

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

-- A session's webhooks follow what tenants see: created when it is published (a small import is never staged),
-- deleted (with its audit event) only if it was ever published.
CREATE OR REPLACE FUNCTION public.canopy_sessions_webhook()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_ctx JSONB;
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF NEW.import_token IS NULL THEN
            PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.created', jsonb_build_object(
                'sessionId', NEW.id, 'userId', NEW.user_id, 'model', NEW.model, 'title', NEW.title));
        END IF;
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.import_token IS NULL THEN
            PERFORM canopy_webhook_enqueue(OLD.tenant_id, 'session.deleted', jsonb_build_object(
                'sessionId', OLD.id, 'userId', OLD.user_id));
            -- The deletion's audit event, in its transaction (a tenant being deleted takes its log with it).
            IF EXISTS (SELECT 1 FROM tenants t WHERE t.id = OLD.tenant_id) THEN
                v_ctx := canopy_audit_context();
                INSERT INTO audit_events (tenant_id, actor, action, target_type, target_id, request_id)
                VALUES (OLD.tenant_id, v_ctx->'actor', 'session.delete', 'session', OLD.id, v_ctx->>'requestId');
            END IF;
        END IF;
    ELSIF OLD.import_token IS NOT NULL AND NEW.import_token IS NULL THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.created', jsonb_build_object(
            'sessionId', NEW.id, 'userId', NEW.user_id, 'model', NEW.model, 'title', NEW.title));
    ELSIF NEW.title IS DISTINCT FROM OLD.title THEN
        PERFORM canopy_webhook_enqueue(NEW.tenant_id, 'session.title', jsonb_build_object(
            'sessionId', NEW.id, 'userId', NEW.user_id, 'title', NEW.title));
    END IF;
    RETURN NULL;
END $function$;

-- SessionStore.startRun: only an idle session starts a run; it becomes busy, owned by the new run p_run.
-- outcome: 'ok' with the claimed session and the new run; else 'busy', 'paused', 'not_found' (no such session
-- for this tenant, or not p_user's when p_user is given), 'rate_limited' (p_max_busy reached) or
-- 'quota_exceeded' (a runs quota used up: quota says which, {userId, period, limit, usage}), and nothing written
-- (but a runs quota's count brought to a new period).
-- p_position, when given, is the new active path ({path, cursors, head}); p_rollback is stored with the run.
-- busy: the tenant's other busy sessions as counted for p_max_busy, with every outcome (NULL when not counted).
CREATE OR REPLACE FUNCTION public.canopy_start_run(p_tenant uuid, p_user text, p_session text, p_run uuid, p_kind run_kind, p_input jsonb, p_status run_status, p_position jsonb, p_rollback jsonb, p_timeout_ms integer, p_max_busy integer, p_actor jsonb, OUT outcome text, OUT session sessions, OUT run runs, OUT busy integer, OUT quota jsonb)
 RETURNS record
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    -- p_position read as the session columns it names (path, cursors, head); the others stay NULL.
    v_position sessions := jsonb_populate_record(NULL::sessions, p_position);
    v_status session_status;
    v_user TEXT;       -- the session's user, whose runs quotas apply besides the tenant's
    v_quota RECORD;
    v_from DATE;       -- the UTC start of a quota's current period
    v_used INTEGER;
    v_counted UUID[];  -- the runs quotas this run counts against once recorded
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_run IS NULL OR p_kind IS NULL OR p_input IS NULL
       OR p_status IS NULL OR p_status NOT IN ('queued', 'running')
       OR jsonb_typeof(p_actor) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'canopy_start_run: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 0. The tenant's limit of runs in flight (its other busy sessions), counted from the partial index
    --    sessions_busy_idx; refused with 'rate_limited'. This session is not counted: busy, it answers 'busy'
    --    below. Concurrent starts in one tenant may each count the same total: a soft limit.
    --    The count is answered (busy) with every outcome, so a caller far below the limit may skip the next
    --    counts for a moment (SessionService's BusyLimitGate); NULL when not counted.
    IF p_max_busy IS NOT NULL THEN
        SELECT count(*) INTO busy FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.status = 'busy'
           AND sessions.id <> p_session;
        IF busy >= p_max_busy THEN
            outcome := 'rate_limited';
            RETURN;
        END IF;
    END IF;

    -- 1. The runs quotas that apply (the tenant's, then the session's user's; day before month), locked in that
    --    order, so concurrent starts they apply to queue here one after the other, each reading the count the one
    --    before it left. A quota used up refuses the run ('quota_exceeded'). A tenant without a runs quota skips
    --    all of it after one probe of quotas_scope_key.
    --    The session is locked first, and only an idle one goes on to the quotas: a start that would find it busy
    --    never holds them, and one that holds them claims the session at once below. Every start locks its
    --    session, then the quotas in the same order (and a quota change locks only quotas): no deadlock.
    IF EXISTS (SELECT 1 FROM quotas WHERE quotas.tenant_id = p_tenant AND quotas.metric = 'runs') THEN
        SELECT sessions.user_id, sessions.status INTO v_user, v_status
          FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
           AND (p_user IS NULL OR sessions.user_id = p_user)
           FOR UPDATE;
        IF NOT FOUND THEN
            outcome := 'not_found';
            RETURN;
        ELSIF v_status <> 'idle' THEN
            outcome := v_status::text;
            RETURN;
        END IF;
        v_counted := ARRAY[]::uuid[];
        FOR v_quota IN
            SELECT quotas.id, quotas.user_id, quotas.period, quotas."limit", quotas.counted, quotas.counted_from
              FROM quotas
             WHERE quotas.tenant_id = p_tenant AND quotas.metric = 'runs'
               AND (quotas.user_id IS NULL OR quotas.user_id = v_user)
             ORDER BY quotas.user_id NULLS FIRST, quotas.period
               FOR UPDATE
        LOOP
            -- The period of the run, as usage_daily files it: the UTC day (or month) of now(), its created_at.
            v_from := CASE WHEN v_quota.period = 'day' THEN (now() AT TIME ZONE 'UTC')::date
                           ELSE date_trunc('month', now() AT TIME ZONE 'UTC')::date END;
            v_used := v_quota.counted;
            IF v_quota.counted_from IS DISTINCT FROM v_from THEN
                -- A new period (or a new quota): counted from the rollup, which holds every run of the scope
                -- committed so far; those still being started wait on the lock held here.
                IF v_quota.user_id IS NULL THEN
                    SELECT coalesce(sum(u.runs), 0) INTO v_used FROM usage_daily u
                     WHERE u.tenant_id = p_tenant AND u.day >= v_from;
                ELSE
                    SELECT coalesce(sum(u.runs), 0) INTO v_used FROM usage_daily u
                     WHERE u.tenant_id = p_tenant AND u.user_id = v_quota.user_id AND u.day >= v_from;
                END IF;
                UPDATE quotas SET counted = v_used, counted_from = v_from
                 WHERE quotas.tenant_id = p_tenant AND quotas.id = v_quota.id;
            END IF;
            IF v_used >= v_quota."limit" THEN
                outcome := 'quota_exceeded';
                quota := jsonb_build_object('userId', v_quota.user_id, 'period', v_quota.period,
                                            'limit', v_quota."limit", 'usage', v_used);
                RETURN;
            END IF;
            v_counted := v_counted || v_quota.id;
        END LOOP;
    END IF;

    LOOP
        -- 2. The claim, a compare-and-set on status: of racing starts, the first to lock the idle row wins; the
        --    others wait for it, re-check the row, find it busy and update nothing. A row that is busy in this
        --    statement's snapshot is skipped without waiting.
        UPDATE sessions
           SET status = 'busy',
               active_run_id = p_run,
               path = CASE WHEN p_position IS NULL THEN sessions.path ELSE v_position.path END,
               cursors = CASE WHEN p_position IS NULL THEN sessions.cursors ELSE v_position.cursors END,
               head = CASE WHEN p_position IS NULL THEN sessions.head ELSE v_position.head END,
               updated_at = now()
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
           AND (p_user IS NULL OR sessions.user_id = p_user)
           AND sessions.status = 'idle'
        RETURNING sessions.* INTO session;
        EXIT WHEN FOUND;

        -- 3. Not claimed: answer why, from the row as it is now. Busy or paused: refused (as if the command came a
        --    moment before a concurrent end). No row: not found. Idle: it went idle after the claim's snapshot;
        --    lock it and look again, and if it is still idle the claim, tried once more, cannot miss.
        SELECT sessions.status INTO v_status
          FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
           AND (p_user IS NULL OR sessions.user_id = p_user);
        IF v_status = 'idle' THEN
            SELECT sessions.status INTO v_status
              FROM sessions
             WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
               AND (p_user IS NULL OR sessions.user_id = p_user)
               FOR UPDATE;
        END IF;
        IF v_status IS NULL THEN
            outcome := 'not_found';
            RETURN;
        ELSIF v_status <> 'idle' THEN
            outcome := v_status::text;
            RETURN;
        END IF;
    END LOOP;

    -- 4. The run, from the claimed row, with who started it. One that starts running at once counts its first
    --    attempt now.
    INSERT INTO runs (id, tenant_id, session_id, kind, status, input, rollback, attempts, started_at, actor)
    VALUES (p_run, p_tenant, session.id, p_kind, p_status, p_input, p_rollback,
            CASE WHEN p_status = 'running' THEN 1 ELSE 0 END,
            CASE WHEN p_status = 'running' THEN now() END,
            p_actor)
    RETURNING runs.* INTO run;

    -- 5. Counted against the runs quotas locked above, in the same transaction as the run.
    IF cardinality(v_counted) > 0 THEN
        UPDATE quotas SET counted = quotas.counted + 1
         WHERE quotas.tenant_id = p_tenant AND quotas.id = ANY (v_counted);
    END IF;
    outcome := 'ok';
END
$function$;

-- A stored usage read as the store reads it (makeUsage(toUsage(u)) in libs/store and libs/core): the ten Usage
-- fields, a field that is missing or no number counting 0, and a missing total the sum of its parts. Numbers are
-- float8 like JavaScript's, printed with the shortest exact digits (extra_float_digits = 1, pinned so a server
-- default cannot round them), so sums in SQL equal the same sums in JavaScript to the last bit.
CREATE OR REPLACE FUNCTION public.canopy_usage(u jsonb)
 RETURNS jsonb
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT jsonb_build_object(
        'inputTokens', COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        'outputTokens', COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        'cacheReadTokens', COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        'cacheWriteTokens', COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        'totalTokens', COALESCE(canopy_usage_number(u, 'totalTokens'),
                        COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        'inputCost', COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        'outputCost', COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        'cacheReadCost', COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        'cacheWriteCost', COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        'totalCost', COALESCE(canopy_usage_number(u, 'totalCost'),
                        COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0)))
$function$;

-- addUsage: two usages (each read as canopy_usage reads it) summed field by field.
CREATE OR REPLACE FUNCTION public.canopy_usage_add(a jsonb, b jsonb)
 RETURNS jsonb
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT jsonb_build_object(
        'inputTokens', COALESCE(canopy_usage_number(a, 'inputTokens'), 0) + COALESCE(canopy_usage_number(b, 'inputTokens'), 0),
        'outputTokens', COALESCE(canopy_usage_number(a, 'outputTokens'), 0) + COALESCE(canopy_usage_number(b, 'outputTokens'), 0),
        'cacheReadTokens', COALESCE(canopy_usage_number(a, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadTokens'), 0),
        'cacheWriteTokens', COALESCE(canopy_usage_number(a, 'cacheWriteTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteTokens'), 0),
        'totalTokens', COALESCE(canopy_usage_number(a, 'totalTokens'),
                        COALESCE(canopy_usage_number(a, 'inputTokens'), 0) + COALESCE(canopy_usage_number(a, 'outputTokens'), 0) + COALESCE(canopy_usage_number(a, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(a, 'cacheWriteTokens'), 0))
        + COALESCE(canopy_usage_number(b, 'totalTokens'),
                        COALESCE(canopy_usage_number(b, 'inputTokens'), 0) + COALESCE(canopy_usage_number(b, 'outputTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteTokens'), 0)),
        'inputCost', COALESCE(canopy_usage_number(a, 'inputCost'), 0) + COALESCE(canopy_usage_number(b, 'inputCost'), 0),
        'outputCost', COALESCE(canopy_usage_number(a, 'outputCost'), 0) + COALESCE(canopy_usage_number(b, 'outputCost'), 0),
        'cacheReadCost', COALESCE(canopy_usage_number(a, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadCost'), 0),
        'cacheWriteCost', COALESCE(canopy_usage_number(a, 'cacheWriteCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteCost'), 0),
        'totalCost', COALESCE(canopy_usage_number(a, 'totalCost'),
                        COALESCE(canopy_usage_number(a, 'inputCost'), 0) + COALESCE(canopy_usage_number(a, 'outputCost'), 0) + COALESCE(canopy_usage_number(a, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(a, 'cacheWriteCost'), 0))
        + COALESCE(canopy_usage_number(b, 'totalCost'),
                        COALESCE(canopy_usage_number(b, 'inputCost'), 0) + COALESCE(canopy_usage_number(b, 'outputCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteCost'), 0)))
$function$;

-- One field of a stored usage as float8; NULL unless it is a JSON number (`->` on a non-object is NULL too).
CREATE OR REPLACE FUNCTION public.canopy_usage_number(u jsonb, field text)
 RETURNS double precision
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$ SELECT CASE WHEN jsonb_typeof(u -> field) = 'number' THEN (u -> field)::float8 END $function$;

-- The vector as a stored usage (canopy_usage's object); NULL for NULL.
CREATE OR REPLACE FUNCTION public.canopy_usage_of_vector(v double precision[])
 RETURNS jsonb
 LANGUAGE sql
 STABLE PARALLEL SAFE
AS $function$
    SELECT CASE WHEN v IS NOT NULL THEN
        jsonb_build_object('inputTokens', v[1], 'outputTokens', v[2], 'cacheReadTokens', v[3],
                           'cacheWriteTokens', v[4], 'totalTokens', v[5], 'inputCost', v[6], 'outputCost', v[7],
                           'cacheReadCost', v[8], 'cacheWriteCost', v[9], 'totalCost', v[10])
    END
$function$;

-- A usage as the vector of its ten fields, each read as canopy_usage reads it (a missing total the sum of parts).
CREATE OR REPLACE FUNCTION public.canopy_usage_vector(u jsonb)
 RETURNS double precision[]
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
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
$function$;

-- The outbox writer: one delivery per enabled endpoint of the tenant that wants the event. SECURITY INVOKER, so
-- row-level security applies (the transaction's tenant sees only its own endpoints).
CREATE OR REPLACE FUNCTION public.canopy_webhook_enqueue(p_tenant uuid, p_type text, p_data jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload)
    SELECT w.tenant_id, w.id, p_type,
           jsonb_build_object('type', p_type,
                              'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                              'data', p_data || jsonb_build_object('tenantId', p_tenant))
      FROM webhooks w
     WHERE w.tenant_id = p_tenant AND w.enabled AND p_type = ANY (w.events)
       -- Not while the tenant itself is being deleted (its endpoints go with it).
       AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = p_tenant);
END $function$;

CREATE TABLE public.api_keys (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    name text,
    prefix text NOT NULL,
    key_hash text NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    last_used_at timestamp(3) with time zone,
    revoked_at timestamp(3) with time zone,
    expires_at timestamp(3) with time zone
);

ALTER TABLE ONLY public.api_keys FORCE ROW LEVEL SECURITY;

CREATE TABLE public.audit_events (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    actor jsonb NOT NULL,
    action text NOT NULL,
    target_type text NOT NULL,
    target_id text,
    request_id text,
    before jsonb,
    after jsonb,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.audit_events FORCE ROW LEVEL SECURITY;

CREATE TABLE public.heavy_operations (
    tenant_id uuid NOT NULL,
    id text NOT NULL,
    kind text NOT NULL,
    expires_at timestamp(3) with time zone NOT NULL
);

ALTER TABLE ONLY public.heavy_operations FORCE ROW LEVEL SECURITY;

CREATE TABLE public.node_search (
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    node_id integer NOT NULL,
    search tsvector NOT NULL
);

ALTER TABLE ONLY public.node_search FORCE ROW LEVEL SECURITY;

CREATE TABLE public.provider_keys (
    tenant_id uuid NOT NULL,
    provider text NOT NULL,
    encrypted_key text NOT NULL,
    base_url text,
    models text[] DEFAULT ARRAY[]::text[] NOT NULL,
    key_hint text NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.provider_keys FORCE ROW LEVEL SECURITY;

CREATE TABLE public.queued_prompts (
    id uuid NOT NULL,
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    seq bigint NOT NULL,
    mode text NOT NULL,
    front boolean DEFAULT false NOT NULL,
    input jsonb NOT NULL,
    actor jsonb NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    CONSTRAINT queued_prompts_mode_check CHECK ((mode = ANY (ARRAY['enqueue'::text, 'interrupt'::text, 'rollback'::text])))
);

ALTER TABLE ONLY public.queued_prompts FORCE ROW LEVEL SECURITY;

CREATE SEQUENCE public.queued_prompts_seq_seq
    START WITH 1
    INCREMENT BY 1
    NO MINVALUE
    NO MAXVALUE
    CACHE 1;

ALTER SEQUENCE public.queued_prompts_seq_seq OWNED BY public.queued_prompts.seq;

CREATE TABLE public.quotas (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    user_id text,
    metric text NOT NULL,
    period text NOT NULL,
    "limit" double precision NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    counted integer DEFAULT 0 NOT NULL,
    counted_from date,
    CONSTRAINT quotas_metric_check CHECK ((metric = ANY (ARRAY['tokens'::text, 'cost'::text, 'runs'::text]))),
    CONSTRAINT quotas_period_check CHECK ((period = ANY (ARRAY['day'::text, 'month'::text])))
);

ALTER TABLE ONLY public.quotas FORCE ROW LEVEL SECURITY;

CREATE TABLE public.tenants (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    name text NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    retention_delete_after_days integer,
    retention_keep text DEFAULT 'pinned'::text NOT NULL,
    disabled_at timestamp(3) with time zone,
    CONSTRAINT tenants_name_check CHECK (((length(name) >= 1) AND (length(name) <= 200))),
    CONSTRAINT tenants_retention_days_check CHECK (((retention_delete_after_days IS NULL) OR ((retention_delete_after_days >= 1) AND (retention_delete_after_days <= 36500)))),
    CONSTRAINT tenants_retention_keep_check CHECK ((retention_keep = ANY (ARRAY['none'::text, 'pinned'::text])))
);

ALTER TABLE ONLY public.tenants FORCE ROW LEVEL SECURITY;

CREATE TABLE public.usage_daily (
    tenant_id uuid NOT NULL,
    day date NOT NULL,
    session_id text NOT NULL,
    user_id text,
    model text,
    runs integer DEFAULT 0 NOT NULL,
    input_tokens double precision DEFAULT 0 NOT NULL,
    output_tokens double precision DEFAULT 0 NOT NULL,
    total_tokens double precision DEFAULT 0 NOT NULL,
    total_cost double precision DEFAULT 0 NOT NULL
);

ALTER TABLE ONLY public.usage_daily FORCE ROW LEVEL SECURITY;

CREATE TABLE public.webhook_deliveries (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    webhook_id uuid NOT NULL,
    event_type text NOT NULL,
    payload jsonb NOT NULL,
    status text DEFAULT 'pending'::text NOT NULL,
    attempts integer DEFAULT 0 NOT NULL,
    attempt_log jsonb DEFAULT '[]'::jsonb NOT NULL,
    next_attempt_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    locked_until timestamp(3) with time zone,
    last_status_code integer,
    last_error text,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    delivered_at timestamp(3) with time zone,
    CONSTRAINT webhook_deliveries_status_check CHECK ((status = ANY (ARRAY['pending'::text, 'delivered'::text, 'failed'::text])))
);

ALTER TABLE ONLY public.webhook_deliveries FORCE ROW LEVEL SECURITY;

CREATE TABLE public.webhooks (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    url text NOT NULL,
    events text[] NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    secret text NOT NULL,
    description text,
    disabled_reason text,
    failing_since timestamp(3) with time zone,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.webhooks FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.queued_prompts ALTER COLUMN seq SET DEFAULT nextval('public.queued_prompts_seq_seq'::regclass);

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.audit_events
    ADD CONSTRAINT audit_events_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.heavy_operations
    ADD CONSTRAINT heavy_operations_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY public.node_search
    ADD CONSTRAINT node_search_pkey PRIMARY KEY (tenant_id, session_id, node_id);

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_pkey PRIMARY KEY (tenant_id, session_id, id);

ALTER TABLE ONLY public.provider_keys
    ADD CONSTRAINT provider_keys_pkey PRIMARY KEY (tenant_id, provider);

ALTER TABLE ONLY public.queued_prompts
    ADD CONSTRAINT queued_prompts_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.quotas
    ADD CONSTRAINT quotas_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_pkey PRIMARY KEY (tenant_id, id);

ALTER TABLE ONLY public.tenants
    ADD CONSTRAINT tenants_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.usage_daily
    ADD CONSTRAINT usage_daily_pkey PRIMARY KEY (tenant_id, day, session_id);

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_pkey PRIMARY KEY (id);

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX api_keys_key_hash_key ON public.api_keys USING btree (key_hash);

CREATE INDEX api_keys_tenant_id_idx ON public.api_keys USING btree (tenant_id);

CREATE INDEX audit_events_created_idx ON public.audit_events USING btree (created_at DESC, id DESC);

CREATE INDEX audit_events_tenant_created_idx ON public.audit_events USING btree (tenant_id, created_at DESC, id DESC);

CREATE INDEX node_search_idx ON public.node_search USING gin (tenant_id, search);

CREATE INDEX queued_prompts_order_idx ON public.queued_prompts USING btree (tenant_id, session_id, front DESC, seq);

CREATE UNIQUE INDEX quotas_scope_key ON public.quotas USING btree (tenant_id, COALESCE(user_id, ''::text), metric, period);

CREATE INDEX runs_created_at_idx ON public.runs USING btree (created_at);

CREATE INDEX runs_finished_at_idx ON public.runs USING btree (finished_at) WHERE (finished_at IS NOT NULL);

CREATE INDEX runs_session_idx ON public.runs USING btree (tenant_id, session_id, created_at DESC);

CREATE INDEX runs_tenant_created_idx ON public.runs USING btree (tenant_id, created_at);

CREATE INDEX runs_unfinished_idx ON public.runs USING btree (status) WHERE (status = ANY (ARRAY['queued'::public.run_status, 'running'::public.run_status, 'paused'::public.run_status]));

CREATE INDEX sessions_base_idx ON public.sessions USING btree (tenant_id, base_session_id) WHERE (base_session_id IS NOT NULL);

CREATE INDEX sessions_busy_idx ON public.sessions USING btree (tenant_id) WHERE (status = 'busy'::public.session_status);

CREATE INDEX sessions_metadata_idx ON public.sessions USING gin (metadata jsonb_path_ops);

CREATE INDEX sessions_staged_idx ON public.sessions USING btree (import_expires_at) WHERE (import_token IS NOT NULL);

CREATE INDEX sessions_tenant_updated_idx ON public.sessions USING btree (tenant_id, updated_at DESC, id DESC);

CREATE INDEX sessions_tenant_user_updated_idx ON public.sessions USING btree (tenant_id, user_id, updated_at DESC, id DESC);

CREATE INDEX tenants_name_idx ON public.tenants USING btree (name, id);

CREATE UNIQUE INDEX tenants_name_lower_key ON public.tenants USING btree (lower(name));

CREATE INDEX usage_daily_user_idx ON public.usage_daily USING btree (tenant_id, user_id, day);

CREATE INDEX webhook_deliveries_leased_idx ON public.webhook_deliveries USING btree (webhook_id, locked_until) WHERE (locked_until IS NOT NULL);

CREATE INDEX webhook_deliveries_pending_idx ON public.webhook_deliveries USING btree (webhook_id, next_attempt_at) WHERE (status = 'pending'::text);

CREATE INDEX webhook_deliveries_webhook_idx ON public.webhook_deliveries USING btree (webhook_id, created_at DESC, id DESC);

CREATE INDEX webhooks_tenant_idx ON public.webhooks USING btree (tenant_id);

CREATE TRIGGER nodes_index_search AFTER INSERT ON public.nodes REFERENCING NEW TABLE AS added_nodes FOR EACH STATEMENT WHEN ((COALESCE(current_setting('canopy.index_nodes'::text, true), ''::text) <> 'off'::text)) EXECUTE FUNCTION public.canopy_index_nodes();

CREATE TRIGGER nodes_parent_exists AFTER INSERT ON public.nodes REFERENCING NEW TABLE AS added_nodes FOR EACH STATEMENT EXECUTE FUNCTION public.canopy_check_parents();

CREATE TRIGGER runs_usage_change AFTER UPDATE OF usage ON public.runs FOR EACH ROW WHEN ((old.usage IS DISTINCT FROM new.usage)) EXECUTE FUNCTION public.canopy_runs_usage();

CREATE TRIGGER runs_usage_insert AFTER INSERT ON public.runs FOR EACH ROW EXECUTE FUNCTION public.canopy_runs_usage();

CREATE TRIGGER runs_webhook AFTER UPDATE OF status ON public.runs FOR EACH ROW EXECUTE FUNCTION public.canopy_runs_webhook();

CREATE TRIGGER sessions_forget_bases AFTER DELETE ON public.sessions REFERENCING OLD TABLE AS deleted_sessions FOR EACH STATEMENT EXECUTE FUNCTION public.canopy_forget_bases();

CREATE TRIGGER sessions_materialize_forks BEFORE DELETE ON public.sessions FOR EACH ROW EXECUTE FUNCTION public.canopy_materialize_forks();

CREATE TRIGGER sessions_webhook AFTER INSERT OR DELETE OR UPDATE OF title, import_token ON public.sessions FOR EACH ROW EXECUTE FUNCTION public.canopy_sessions_webhook();

ALTER TABLE ONLY public.api_keys
    ADD CONSTRAINT api_keys_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.audit_events
    ADD CONSTRAINT audit_events_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.heavy_operations
    ADD CONSTRAINT heavy_operations_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.node_search
    ADD CONSTRAINT node_search_node_fkey FOREIGN KEY (tenant_id, session_id, node_id) REFERENCES public.nodes(tenant_id, session_id, id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.nodes
    ADD CONSTRAINT nodes_tenant_id_session_id_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.provider_keys
    ADD CONSTRAINT provider_keys_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.queued_prompts
    ADD CONSTRAINT queued_prompts_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.quotas
    ADD CONSTRAINT quotas_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.runs
    ADD CONSTRAINT runs_tenant_id_session_id_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.sessions
    ADD CONSTRAINT sessions_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE ONLY public.usage_daily
    ADD CONSTRAINT usage_daily_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhook_deliveries
    ADD CONSTRAINT webhook_deliveries_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES public.webhooks(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.webhooks
    ADD CONSTRAINT webhooks_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.api_keys ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.audit_events ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.heavy_operations ENABLE ROW LEVEL SECURITY;

CREATE POLICY key_lookup ON public.api_keys FOR SELECT USING ((key_hash = NULLIF(current_setting('canopy.key_hash'::text, true), ''::text)));

ALTER TABLE public.node_search ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.nodes ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.provider_keys ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.queued_prompts ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.quotas ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.runs ENABLE ROW LEVEL SECURITY;

CREATE POLICY search ON public.node_search FOR SELECT USING (((tenant_id = public.canopy_current_tenant()) AND (search @@ public.canopy_search_query())));

ALTER TABLE public.sessions ENABLE ROW LEVEL SECURITY;

CREATE POLICY staged_import ON public.sessions AS RESTRICTIVE USING (((import_token IS NULL) OR (import_token = NULLIF(current_setting('canopy.import'::text, true), ''::text)) OR public.canopy_is_admin()));

CREATE POLICY tenant_delete ON public.node_search FOR DELETE USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_insert ON public.node_search FOR INSERT WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.api_keys USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.audit_events USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.heavy_operations USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.nodes USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.provider_keys USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.queued_prompts USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.quotas USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.runs USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.sessions USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.tenants USING (((id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.usage_daily USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.webhook_deliveries USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE POLICY tenant_isolation ON public.webhooks USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

ALTER TABLE public.tenants ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.usage_daily ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.webhook_deliveries ENABLE ROW LEVEL SECURITY;

ALTER TABLE public.webhooks ENABLE ROW LEVEL SECURITY;

RESET check_function_bodies;
