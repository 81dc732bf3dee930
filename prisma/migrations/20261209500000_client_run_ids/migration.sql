-- Which run a client names, and where each run ended in the tree: a run records the id its client gave it
-- (runs.client_run_id, AG-UI's runId; NULL for runs started otherwise) and the head its last commit left
-- (runs.head_node, written by canopy_commit in its UPDATE of the run: no statement of its own). A client's later
-- input naming that run as its parent (AG-UI's parentRunId) branches after that node. Looked up by tenant, session
-- and client run id (runs_client_run_idx, only over runs that have one).

ALTER TABLE public.runs ADD COLUMN client_run_id text;

ALTER TABLE public.runs ADD COLUMN head_node integer;

CREATE INDEX runs_client_run_idx ON public.runs USING btree (tenant_id, session_id, client_run_id)
    WHERE (client_run_id IS NOT NULL);

-- SessionStore.commit: appends the nodes p_nodes ([{id, parentId, message, usage, tokens}], the role taken from
-- the message, tokens the message's count for the session's model), moves the position to p_position ({path,
-- cursors, head}, and context_meter: the token meter of the new head, kept when the run ends here; instead of
-- path, {path_keep, path_length, path_at, path_append}: the session's path cut to its first path_keep ids, then
-- path_append, checked against the stored path's length and its path_keep-th id, so that a long path is not sent
-- whole, and outcome 'stale_path' with nothing written when the check fails), sets next_node_id, adds p_usage to the
-- session's usage and clears the run's rollback point and pending state, fenced on p_run still being the
-- session's active run (and the session being p_user's when p_user is given). With p_finish (the run's usage so
-- far), also records that usage on the run (settled into usage_daily by its trigger) and ends the run (completed)
-- and sets the session idle, unless a prompt was steered onto the run: then the run goes on, its steer cleared
-- and handed back. p_finish may also carry firstOutputMs, the time from the run's creation to its first output
-- (the first one recorded stays): the dashboard's time to first token. Every commit also records on the run the
-- head it leaves (runs.head_node): where a later prompt branches to continue after that run (AG-UI's parentRunId).
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
    v_path INTEGER[]; -- the new path, when p_position gives it as a cut of the stored one and ids after it
    v_keep INTEGER := (p_position ->> 'path_keep')::int;
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
    IF v_keep IS NOT NULL THEN
        SELECT CASE WHEN cardinality(sessions.path) = (p_position ->> 'path_length')::int
                     AND sessions.path[v_keep] IS NOT DISTINCT FROM (p_position ->> 'path_at')::int
                    THEN sessions.path[1:v_keep]
                         || ARRAY(SELECT appended.id::int
                                    FROM jsonb_array_elements_text(p_position -> 'path_append')
                                         WITH ORDINALITY AS appended(id, n)
                                   ORDER BY appended.n) END
          INTO v_path
          FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session;
        IF v_path IS NULL THEN
            outcome := 'stale_path';
            titled := false;
            queued := false;
            RETURN;
        END IF;
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
           first_output_ms = COALESCE(runs.first_output_ms, (p_finish->>'firstOutputMs')::integer),
           -- The head this commit leaves: after the run's last commit, where the run ended in the tree.
           head_node = v_position.head,
           finished_at = CASE WHEN v_ends THEN now() ELSE runs.finished_at END,
           updated_at = now()
     WHERE runs.tenant_id = p_tenant AND runs.id = p_run;

    -- 4. The session: position, next node id, usage total; idle and free when the run ended.
    UPDATE sessions
       SET path = COALESCE(v_path, v_position.path),
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
