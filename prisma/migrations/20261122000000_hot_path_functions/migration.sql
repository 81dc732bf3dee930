-- The session store's hot path as SQL functions, so that starting a run, loading it for execution and committing
-- a turn each take ONE round trip: the store calls them as a single statement in autocommit (no BEGIN/COMMIT),
-- and that statement's implicit transaction is the transaction. Each socket write costs the engine ~140 µs of CPU
-- on a small VM; over BEGIN ... COMMIT a start took 3 writes and a commit 4.
--
-- Each function first declares the tenant it acts for (canopy_enter), then works under row-level security like
-- any other query: they are SECURITY INVOKER (the default), so the policies apply to the calling role, and they
-- can do nothing that role could not do with set_config and plain statements. They keep the semantics of the
-- statements they replace in libs/store/src/prisma-session.store.ts, whose port documents them: compare-and-set
-- on the session's status or active run, user scoping (a user reaches only its own sessions), the steer fold,
-- usage summed like addUsage.
--
-- In READ COMMITTED every statement of a PL/pgSQL function takes a fresh snapshot, so a statement that follows a
-- lock wait sees what the lock holder committed: the follow-up statements the single-statement versions needed
-- in that case happen here, server-side.
--
-- Function bodies hold `;`: the project's migrator sends each script whole, as `prisma migrate deploy` does
-- (libs/store/src/migrator.ts), not cut at every `;` as the pg driver adapter alone would.

-- Declares the tenant a hot-path function acts for and bounds its lock waits by the store's transaction
-- deadline, both transaction-local (set_config(..., true)): in autocommit, the calling statement only (called
-- inside an explicit transaction, they would stay for the rest of it, like withTenantSql's own settings).
--
-- Why lock_timeout and not the statement/idle timeouts of the BEGIN road: statement_timeout is armed when a
-- statement starts, so setting it inside the statement bounds only the next one, and one statement has no idle
-- time for idle_in_transaction_session_timeout to bound. What can hold one of these short statements is a row
-- lock, and lock_timeout applies to every lock wait that follows it (SQLSTATE 55P03; the store maps it to
-- unavailable like its other deadlines).
CREATE FUNCTION "canopy_enter"(p_tenant UUID, p_timeout_ms INTEGER) RETURNS VOID
    LANGUAGE plpgsql VOLATILE
    AS $$
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
$$;

-- One field of a stored usage as float8; NULL unless it is a JSON number (`->` on a non-object is NULL too).
CREATE FUNCTION "canopy_usage_number"(u JSONB, field TEXT) RETURNS FLOAT8
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN jsonb_typeof(u -> field) = 'number' THEN (u -> field)::float8 END $$;

-- A stored usage read as the store reads it (makeUsage(toUsage(u)) in libs/store and libs/core): the ten Usage
-- fields, a field that is missing or no number counting 0, and a missing total the sum of its parts. Numbers are
-- float8 like JavaScript's, printed with the shortest exact digits (extra_float_digits = 1, pinned so a server
-- default cannot round them), so sums in SQL equal the same sums in JavaScript to the last bit.
CREATE FUNCTION "canopy_usage"(u JSONB) RETURNS JSONB
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET extra_float_digits = 1
    AS $$
    SELECT jsonb_build_object(
               'inputTokens', p.input_tokens,
               'outputTokens', p.output_tokens,
               'cacheReadTokens', p.cache_read_tokens,
               'cacheWriteTokens', p.cache_write_tokens,
               'totalTokens', COALESCE(canopy_usage_number(u, 'totalTokens'),
                                       p.input_tokens + p.output_tokens + p.cache_read_tokens + p.cache_write_tokens),
               'inputCost', p.input_cost,
               'outputCost', p.output_cost,
               'cacheReadCost', p.cache_read_cost,
               'cacheWriteCost', p.cache_write_cost,
               'totalCost', COALESCE(canopy_usage_number(u, 'totalCost'),
                                     p.input_cost + p.output_cost + p.cache_read_cost + p.cache_write_cost))
      FROM (SELECT COALESCE(canopy_usage_number(u, 'inputTokens'), 0) AS input_tokens,
                   COALESCE(canopy_usage_number(u, 'outputTokens'), 0) AS output_tokens,
                   COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) AS cache_read_tokens,
                   COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0) AS cache_write_tokens,
                   COALESCE(canopy_usage_number(u, 'inputCost'), 0) AS input_cost,
                   COALESCE(canopy_usage_number(u, 'outputCost'), 0) AS output_cost,
                   COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) AS cache_read_cost,
                   COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0) AS cache_write_cost) AS p
$$;

-- addUsage: two usages (each read as canopy_usage reads it) summed field by field.
CREATE FUNCTION "canopy_usage_add"(a JSONB, b JSONB) RETURNS JSONB
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    SET extra_float_digits = 1
    AS $$
    SELECT jsonb_object_agg(x.key, x.value::float8 + y.value::float8)
      FROM jsonb_each(canopy_usage(a)) AS x
      JOIN jsonb_each(canopy_usage(b)) AS y ON y.key = x.key
$$;

-- SessionStore.startRun: only an idle session starts a run; it becomes busy, owned by the new run p_run.
-- outcome: 'ok' with the claimed session and the new run; else 'busy', 'paused' or 'not_found' (no such session
-- for this tenant, or not p_user's when p_user is given) and nothing written.
-- p_position, when given, is the new active path ({path, cursors, head}); p_rollback is stored with the run.
CREATE FUNCTION "canopy_start_run"(
    p_tenant UUID, p_user TEXT, p_session TEXT, p_run UUID, p_kind "run_kind", p_input JSONB,
    p_status "run_status", p_position JSONB, p_rollback JSONB, p_timeout_ms INTEGER,
    OUT outcome TEXT, OUT session "sessions", OUT run "runs")
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    -- p_position read as the session columns it names (path, cursors, head); the others stay NULL.
    v_position sessions := jsonb_populate_record(NULL::sessions, p_position);
    v_status session_status;
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_run IS NULL OR p_kind IS NULL OR p_input IS NULL
       OR p_status IS NULL OR p_status NOT IN ('queued', 'running') THEN
        RAISE EXCEPTION 'canopy_start_run: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    LOOP
        -- 1. The claim, a compare-and-set on status: of racing starts, the first to lock the idle row wins; the
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

        -- 2. Not claimed: answer why, from the row as it is now. Busy or paused: refused (as if the command came a
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

    -- 3. The run, from the claimed row. One that starts running at once counts its first attempt now.
    INSERT INTO runs (id, tenant_id, session_id, kind, status, input, rollback, attempts, started_at)
    VALUES (p_run, p_tenant, session.id, p_kind, p_status, p_input, p_rollback,
            CASE WHEN p_status = 'running' THEN 1 ELSE 0 END,
            CASE WHEN p_status = 'running' THEN now() END)
    RETURNING runs.* INTO run;
    outcome := 'ok';
END
$$;

-- SessionStore.loadRun: takes run p_run for execution. A queued run becomes running, a running one is taken over;
-- one more attempt either way. Answers the session, the run and the nodes of the active path, root first
-- (json: [{id, parentId, message, usage}]). All NULL when the run is not the session's active run (or the
-- session is not p_user's when p_user is given), or is not queued or running: nothing to execute, nothing written.
CREATE FUNCTION "canopy_load_run"(
    p_tenant UUID, p_user TEXT, p_session TEXT, p_run UUID, p_timeout_ms INTEGER,
    OUT session "sessions", OUT run "runs", OUT path_nodes JSON)
    LANGUAGE plpgsql VOLATILE
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

    -- 3. The active path's nodes, in path order (ids not found are left out). This statement's snapshot is newer
    --    than the lock, so it sees the nodes of a commit the lock waited for.
    SELECT COALESCE(json_agg(json_build_object('id', nodes.id, 'parentId', nodes.parent_id,
                                               'message', nodes.message, 'usage', nodes.usage)
                             ORDER BY step.ord), '[]')
      INTO path_nodes
      FROM unnest(session.path) WITH ORDINALITY AS step(id, ord)
      JOIN nodes ON nodes.tenant_id = p_tenant AND nodes.session_id = p_session AND nodes.id = step.id;
END
$$;

-- SessionStore.commit: appends the nodes p_nodes ([{id, parentId, message, usage}], the role taken from the
-- message), moves the position to p_position ({path, cursors, head}), sets next_node_id, adds p_usage to the
-- session's usage and clears the run's rollback point and pending state, fenced on p_run still being the
-- session's active run (and the session being p_user's when p_user is given). With p_finish (the run's usage),
-- also ends the run (completed) and sets the session idle, unless a prompt was steered onto the run: then the run
-- goes on, its steer cleared and handed back.
-- outcome: 'fenced' (nothing written) or 'ok'; steer: the steered prompt, when a finishing commit found one.
CREATE FUNCTION "canopy_commit"(
    p_tenant UUID, p_user TEXT, p_session TEXT, p_run UUID, p_nodes JSONB, p_position JSONB,
    p_next_node_id INTEGER, p_usage JSONB, p_finish JSONB, p_timeout_ms INTEGER,
    OUT outcome TEXT, OUT steer JSONB)
    LANGUAGE plpgsql VOLATILE
    AS $$
DECLARE
    v_position sessions := jsonb_populate_record(NULL::sessions, p_position);
    v_total JSONB;    -- the session's usage before this commit
    v_ends BOOLEAN;   -- a finishing commit with no steer: the run ends
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_run IS NULL OR jsonb_typeof(p_nodes) IS DISTINCT FROM 'array'
       OR jsonb_typeof(p_position) IS DISTINCT FROM 'object' OR p_next_node_id IS NULL OR p_usage IS NULL THEN
        RAISE EXCEPTION 'canopy_commit: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 1. The fence, which also locks the session and reads its usage total. Every writer of a run locks its
    --    session first, so from here on the run row is ours too.
    SELECT sessions.usage INTO v_total
      FROM sessions
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session
       AND (p_user IS NULL OR sessions.user_id = p_user)
       AND sessions.active_run_id = p_run
       FOR UPDATE;
    IF NOT FOUND THEN
        outcome := 'fenced';
        RETURN;
    END IF;

    -- 2. The turn's nodes. Parents inserted by the same statement satisfy the foreign key, checked at its end.
    INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage)
    SELECT p_tenant, p_session, n.id, n."parentId", (n.message ->> 'role')::message_role, n.message, n.usage
      FROM jsonb_to_recordset(p_nodes) AS n(id INTEGER, "parentId" INTEGER, message JSONB, usage JSONB);

    -- 3. The run. A finishing commit reads the steer staged on it (after the lock above: every stager locks the
    --    session first, so none staged before it is missed) and takes it: cleared here, handed back below.
    IF p_finish IS NOT NULL THEN
        SELECT runs.steer INTO steer FROM runs WHERE runs.tenant_id = p_tenant AND runs.id = p_run;
    END IF;
    v_ends := p_finish IS NOT NULL AND steer IS NULL;
    UPDATE runs
       SET rollback = NULL,
           pending = NULL,
           steer = CASE WHEN p_finish IS NULL THEN runs.steer END,
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
           status = CASE WHEN v_ends THEN 'idle' ELSE sessions.status END,
           active_run_id = CASE WHEN v_ends THEN NULL ELSE sessions.active_run_id END,
           updated_at = now()
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session;
    outcome := 'ok';
END
$$;
