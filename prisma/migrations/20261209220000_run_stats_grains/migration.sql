-- run_stats_daily at the two grains the dashboard reads, instead of one row per (model, user) pair: a row per
-- tenant, UTC day and model (grain 'model') and one per tenant, day and user (grain 'user', key '' for sessions of no
-- user). A year per model then reads at most 366 rows per model, per user 366 per user active that year; a (model,
-- user) pair's rows made a per-model year as large as every pair's (365,000 rows for 5 models x 200 daily users:
-- ~0.85 s). Each run and rating writes both rows. The table held only what the last migration started counting: it
-- starts over.

DROP TABLE public.run_stats_daily;

CREATE TABLE public.run_stats_daily (
    tenant_id uuid NOT NULL,
    day date NOT NULL,
    grain text NOT NULL,
    key text NOT NULL,
    runs integer DEFAULT 0 NOT NULL,
    finished integer DEFAULT 0 NOT NULL,
    errors integer DEFAULT 0 NOT NULL,
    latency_ms_sum double precision DEFAULT 0 NOT NULL,
    latency_hist integer[] NOT NULL,
    input_tokens double precision DEFAULT 0 NOT NULL,
    output_tokens double precision DEFAULT 0 NOT NULL,
    total_tokens double precision DEFAULT 0 NOT NULL,
    total_cost double precision DEFAULT 0 NOT NULL,
    thumbs_up integer DEFAULT 0 NOT NULL,
    thumbs_down integer DEFAULT 0 NOT NULL,
    CONSTRAINT run_stats_daily_grain_check CHECK ((grain = ANY (ARRAY['model'::text, 'user'::text])))
);

ALTER TABLE ONLY public.run_stats_daily FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.run_stats_daily
    ADD CONSTRAINT run_stats_daily_pkey PRIMARY KEY (tenant_id, grain, day, key);

ALTER TABLE ONLY public.run_stats_daily
    ADD CONSTRAINT run_stats_daily_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.run_stats_daily ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.run_stats_daily USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

-- Ratings rolled up beside the runs in run_stats_daily: per tenant and UTC day of the rating's creation, in the row
-- of the model it rates and in the rater's; a rating added, changed (up <-> down) or removed moves the counts by what
-- changed. Not while the tenant itself is being deleted (its rollups go with it).
CREATE OR REPLACE FUNCTION public.canopy_feedback_stats()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF TG_OP = 'UPDATE' AND NEW.rating = OLD.rating THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = OLD.tenant_id) THEN
        INSERT INTO run_stats_daily AS d (tenant_id, day, grain, key, latency_hist, thumbs_up, thumbs_down)
        SELECT OLD.tenant_id, (OLD.created_at AT TIME ZONE 'UTC')::date, k.grain, k.key, array_fill(0, ARRAY[64]),
               -(OLD.rating = 'up')::integer, -(OLD.rating = 'down')::integer
          FROM (VALUES ('model', OLD.model), ('user', coalesce(OLD.user_id, ''))) AS k(grain, key)
        ON CONFLICT (tenant_id, day, grain, key) DO UPDATE
           SET thumbs_up = d.thumbs_up + EXCLUDED.thumbs_up,
               thumbs_down = d.thumbs_down + EXCLUDED.thumbs_down;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO run_stats_daily AS d (tenant_id, day, grain, key, latency_hist, thumbs_up, thumbs_down)
        SELECT NEW.tenant_id, (NEW.created_at AT TIME ZONE 'UTC')::date, k.grain, k.key, array_fill(0, ARRAY[64]),
               (NEW.rating = 'up')::integer, (NEW.rating = 'down')::integer
          FROM (VALUES ('model', NEW.model), ('user', coalesce(NEW.user_id, ''))) AS k(grain, key)
        ON CONFLICT (tenant_id, day, grain, key) DO UPDATE
           SET thumbs_up = d.thumbs_up + EXCLUDED.thumbs_up,
               thumbs_down = d.thumbs_down + EXCLUDED.thumbs_down;
    END IF;
    RETURN NULL;
END $function$;

-- Runs rolled up per tenant and UTC day (of the run's creation) at two grains, its model's row and its user's (the
-- session's when the trigger fires): a run counts when it is created; its tokens and cost are settled whenever its
-- recorded usage changes, by what changed (as canopy_runs_usage does for usage_daily); when it ends, it counts as
-- finished (or failed) and its latency (created -> finished) goes into the day's histogram. In the transaction that
-- wrote the run.
CREATE OR REPLACE FUNCTION public.canopy_run_stats()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_runs INTEGER := 0;
    v_finished INTEGER := 0;
    v_errors INTEGER := 0;
    v_bucket INTEGER := NULL;
    v_latency DOUBLE PRECISION := 0;
    v_usage JSONB := coalesce(NEW.usage, '{}'::jsonb);
    v_before JSONB := v_usage;
    v_hist INTEGER[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        v_runs := 1;
        v_before := '{}'::jsonb;
    ELSE
        IF NEW.usage IS DISTINCT FROM OLD.usage THEN
            v_before := coalesce(OLD.usage, '{}'::jsonb);
        END IF;
        IF OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL THEN
            v_finished := 1;
            v_errors := (NEW.status = 'error')::integer;
            v_latency := greatest(0, extract(epoch FROM NEW.finished_at - NEW.created_at) * 1000);
            v_bucket := canopy_latency_bucket(v_latency);
        END IF;
        IF v_finished = 0 AND v_before = v_usage THEN
            RETURN NULL;
        END IF;
    END IF;
    v_hist := array_fill(0, ARRAY[64]);
    IF v_bucket IS NOT NULL THEN
        v_hist[v_bucket] := 1;
    END IF;
    INSERT INTO run_stats_daily AS d (tenant_id, day, grain, key, runs, finished, errors, latency_ms_sum,
                                      latency_hist, input_tokens, output_tokens, total_tokens, total_cost)
    SELECT NEW.tenant_id, (NEW.created_at AT TIME ZONE 'UTC')::date, k.grain, k.key,
           v_runs, v_finished, v_errors, v_latency, v_hist,
           coalesce((v_usage->>'inputTokens')::float8, 0) - coalesce((v_before->>'inputTokens')::float8, 0),
           coalesce((v_usage->>'outputTokens')::float8, 0) - coalesce((v_before->>'outputTokens')::float8, 0),
           coalesce((v_usage->>'totalTokens')::float8, 0) - coalesce((v_before->>'totalTokens')::float8, 0),
           coalesce((v_usage->>'totalCost')::float8, 0) - coalesce((v_before->>'totalCost')::float8, 0)
      FROM (SELECT 1) one
      LEFT JOIN sessions s ON s.tenant_id = NEW.tenant_id AND s.id = NEW.session_id
     CROSS JOIN LATERAL (VALUES ('model', coalesce(s.model, '')), ('user', coalesce(s.user_id, ''))) AS k(grain, key)
    ON CONFLICT (tenant_id, day, grain, key) DO UPDATE
       SET runs = d.runs + EXCLUDED.runs,
           finished = d.finished + EXCLUDED.finished,
           errors = d.errors + EXCLUDED.errors,
           latency_ms_sum = d.latency_ms_sum + EXCLUDED.latency_ms_sum,
           latency_hist = CASE WHEN v_bucket IS NULL THEN d.latency_hist
                               ELSE (SELECT array_agg(coalesce(d.latency_hist[i], 0) + EXCLUDED.latency_hist[i]
                                                      ORDER BY i)
                                       FROM generate_series(1, 64) AS i) END,
           input_tokens = d.input_tokens + EXCLUDED.input_tokens,
           output_tokens = d.output_tokens + EXCLUDED.output_tokens,
           total_tokens = d.total_tokens + EXCLUDED.total_tokens,
           total_cost = d.total_cost + EXCLUDED.total_cost;
    RETURN NULL;
END $function$;
