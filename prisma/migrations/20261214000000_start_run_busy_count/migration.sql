-- canopy_start_run answers the count of the tenant's other busy sessions it made for the limit of runs in flight
-- (OUT busy, NULL when p_max_busy is NULL), with every outcome. The count reads one row per run in flight of the
-- tenant (~35 rows per run at 100 concurrent sessions in the HTTP bench, most of a run's reads): an api process
-- far below the limit skips it for up to a second between counts (BusyLimitGate) and needs the last count for that.
-- Same function as in 20261201000000_run_actor otherwise; a new OUT parameter changes the result type, so the
-- function is dropped and created again.

DROP FUNCTION "canopy_start_run"(UUID, TEXT, TEXT, UUID, "run_kind", JSONB, "run_status", JSONB, JSONB, INTEGER, INTEGER, JSONB);

CREATE FUNCTION "canopy_start_run"(p_tenant uuid, p_user text, p_session text, p_run uuid, p_kind run_kind, p_input jsonb, p_status run_status, p_position jsonb, p_rollback jsonb, p_timeout_ms integer, p_max_busy integer, p_actor jsonb, OUT outcome text, OUT session sessions, OUT run runs, OUT busy integer)
 RETURNS record
 LANGUAGE plpgsql
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
$$;;
