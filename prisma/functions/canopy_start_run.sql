-- canopy_start_run(p_tenant uuid, p_user text, p_session text, p_run uuid, p_kind run_kind, p_input jsonb, p_status run_status, p_position jsonb, p_rollback jsonb, p_timeout_ms integer, p_max_busy integer, p_actor jsonb, OUT outcome text, OUT session sessions, OUT run runs, OUT busy integer, OUT quota jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
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
