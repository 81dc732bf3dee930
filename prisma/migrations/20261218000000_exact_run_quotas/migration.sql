-- Runs quotas become exact: the statement that records a run counts it against every runs quota that applies
-- (the tenant's and the session's user's, per day and per month), under a lock on those quota rows, and refuses it
-- when one is used up. Concurrent starts of one tenant (or user) with such a quota serialise on the lock, across
-- every process of a deployment; tenants without a runs quota pay one index probe of `quotas` and nothing else.
-- And token and cost usage is settled at each turn's end and pause, not only at the run's end, so a run that
-- pauses or takes steered prompts shows its usage so far to the quotas' admission.

-- A runs quota's count: `counted` runs since `counted_from`, the UTC start of the period it was made for (NULL:
-- never counted). A start in a later period counts it again from usage_daily first (runs started before the
-- quota was set count too), under the same lock.
ALTER TABLE "quotas" ADD COLUMN "counted" INTEGER NOT NULL DEFAULT 0;
ALTER TABLE "quotas" ADD COLUMN "counted_from" DATE;

DROP FUNCTION "canopy_start_run"(UUID, TEXT, TEXT, UUID, "run_kind", JSONB, "run_status", JSONB, JSONB, INTEGER, INTEGER, JSONB);

-- SessionStore.startRun: only an idle session starts a run; it becomes busy, owned by the new run p_run.
-- outcome: 'ok' with the claimed session and the new run; else 'busy', 'paused', 'not_found' (no such session
-- for this tenant, or not p_user's when p_user is given), 'rate_limited' (p_max_busy reached) or
-- 'quota_exceeded' (a runs quota used up: quota says which, {userId, period, limit, usage}), and nothing written
-- (but a runs quota's count brought to a new period).
-- p_position, when given, is the new active path ({path, cursors, head}); p_rollback is stored with the run.
-- busy: the tenant's other busy sessions as counted for p_max_busy, with every outcome (NULL when not counted).
CREATE FUNCTION "canopy_start_run"(p_tenant uuid, p_user text, p_session text, p_run uuid, p_kind run_kind, p_input jsonb, p_status run_status, p_position jsonb, p_rollback jsonb, p_timeout_ms integer, p_max_busy integer, p_actor jsonb, OUT outcome text, OUT session sessions, OUT run runs, OUT busy integer, OUT quota jsonb)
 RETURNS record
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $$
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
$$;

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

-- Usage rolled up per tenant, UTC day (of the run's start) and session: a run counts when it is created (runs),
-- and its tokens and cost are settled whenever its recorded usage changes (a turn's end, a pause, the run's end),
-- by what changed, in the transaction that wrote it. So usage_daily always holds the sum of the runs' recorded
-- usage, whether they ended or not.
CREATE OR REPLACE FUNCTION "canopy_runs_usage"() RETURNS TRIGGER
    LANGUAGE plpgsql VOLATILE
    AS $$
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
END $$;

-- Fired by a change of the recorded usage only (commits and loads that leave it as it was call nothing).
DROP TRIGGER "runs_usage_end" ON "runs";
CREATE TRIGGER "runs_usage_change" AFTER UPDATE OF "usage" ON "runs"
    FOR EACH ROW WHEN (OLD."usage" IS DISTINCT FROM NEW."usage") EXECUTE FUNCTION "canopy_runs_usage"();

-- The usage recorded on runs that have not ended (paused ones) was not in the rollup yet: settled now, as the
-- trigger would have (this transaction only sees every tenant).
SELECT set_config('canopy.admin', 'on', true);
INSERT INTO "usage_daily" AS u ("tenant_id", "day", "session_id", "user_id", "model", "runs", "input_tokens",
                                "output_tokens", "total_tokens", "total_cost")
SELECT r."tenant_id", (r."created_at" AT TIME ZONE 'UTC')::date, r."session_id", max(s."user_id"), max(s."model"), 0,
       coalesce(sum((r."usage"->>'inputTokens')::float8), 0), coalesce(sum((r."usage"->>'outputTokens')::float8), 0),
       coalesce(sum((r."usage"->>'totalTokens')::float8), 0), coalesce(sum((r."usage"->>'totalCost')::float8), 0)
  FROM "runs" r LEFT JOIN "sessions" s ON s."tenant_id" = r."tenant_id" AND s."id" = r."session_id"
 WHERE r."status" NOT IN ('completed', 'error', 'cancelled') AND r."usage" <> '{}'::jsonb
 GROUP BY 1, 2, 3
ON CONFLICT ("tenant_id", "day", "session_id") DO UPDATE
   SET input_tokens = u.input_tokens + EXCLUDED.input_tokens,
       output_tokens = u.output_tokens + EXCLUDED.output_tokens,
       total_tokens = u.total_tokens + EXCLUDED.total_tokens,
       total_cost = u.total_cost + EXCLUDED.total_cost;
SELECT set_config('canopy.admin', '', true);
