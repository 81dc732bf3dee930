-- Who started a run (seed 001's acting caller): {"type": "key", "keyId"} for a tenant API key, {"type": "user",
-- "userId"} for an end user's token, {"type": "admin"}, or {"type": "system"} for work no caller drove. Hooks and
-- server tools of the run act in that caller's scope. NULL for runs recorded before this column existed.
-- canopy_start_run records it with the run: same function as in 20261124000000_tenant_run_limit, with p_actor
-- added; the old signature is dropped so that no caller reaches it.

ALTER TABLE "runs" ADD COLUMN "actor" JSONB;

DROP FUNCTION "canopy_start_run"(UUID, TEXT, TEXT, UUID, "run_kind", JSONB, "run_status", JSONB, JSONB, INTEGER, INTEGER);

CREATE FUNCTION "canopy_start_run"(
    p_tenant UUID, p_user TEXT, p_session TEXT, p_run UUID, p_kind "run_kind", p_input JSONB,
    p_status "run_status", p_position JSONB, p_rollback JSONB, p_timeout_ms INTEGER, p_max_busy INTEGER,
    p_actor JSONB,
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
       OR p_status IS NULL OR p_status NOT IN ('queued', 'running')
       OR jsonb_typeof(p_actor) IS DISTINCT FROM 'object' THEN
        RAISE EXCEPTION 'canopy_start_run: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;

    -- 0. The tenant's limit of runs in flight (its other busy sessions), counted from the partial index
    --    sessions_busy_idx; refused with 'rate_limited'. This session is not counted: busy, it answers 'busy'
    --    below. Concurrent starts in one tenant may each count the same total: a soft limit.
    IF p_max_busy IS NOT NULL AND (
        SELECT count(*) FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.status = 'busy'
           AND sessions.id <> p_session) >= p_max_busy THEN
        outcome := 'rate_limited';
        RETURN;
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

    -- 3. The run, from the claimed row, with who started it. One that starts running at once counts its first
    --    attempt now.
    INSERT INTO runs (id, tenant_id, session_id, kind, status, input, rollback, attempts, started_at, actor)
    VALUES (p_run, p_tenant, session.id, p_kind, p_status, p_input, p_rollback,
            CASE WHEN p_status = 'running' THEN 1 ELSE 0 END,
            CASE WHEN p_status = 'running' THEN now() END,
            p_actor)
    RETURNING runs.* INTO run;
    outcome := 'ok';
END
$$;
