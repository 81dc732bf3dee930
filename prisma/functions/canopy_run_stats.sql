-- canopy_run_stats()
--
-- Defined last by prisma/migrations/20261209240000_run_stats_at_end/migration.sql (first by 20261209210000_run_stats_daily).
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- Runs rolled up per tenant and UTC day (of the run's creation) at two grains, its model's row and its user's (the
-- session's when the trigger fires): its tokens and cost are settled whenever its recorded usage changes, by what
-- changed (as canopy_runs_usage does for usage_daily); when it ends, it counts as a run, finished (or failed), its
-- latency (created -> finished) goes into the day's histogram, and its time to first output
-- (runs.first_output_ms, when its finishing commit recorded one) into another. In the transaction that wrote the
-- run. A run is not counted when it is created: every run of a tenant and model would update the same row there,
-- and a run's start would wait for every other start's transaction (and a statement inserting many runs would
-- update one row once per run).
CREATE OR REPLACE FUNCTION public.canopy_run_stats()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    v_runs INTEGER := 0;
    v_finished INTEGER := 0;
    v_errors INTEGER := 0;
    v_bucket INTEGER := NULL;
    v_ttft_bucket INTEGER := NULL;
    v_ttft INTEGER[];
    v_latency DOUBLE PRECISION := 0;
    v_usage JSONB := coalesce(NEW.usage, '{}'::jsonb);
    v_before JSONB := v_usage;
    v_hist INTEGER[];
BEGIN
    IF TG_OP = 'INSERT' THEN
        -- A run written with usage or already ended (an import of runs, a test's rows).
        v_before := '{}'::jsonb;
        IF NEW.finished_at IS NOT NULL THEN
            v_runs := 1;
            v_finished := 1;
            v_errors := (NEW.status = 'error')::integer;
            v_latency := greatest(0, extract(epoch FROM NEW.finished_at - NEW.created_at) * 1000);
            v_bucket := canopy_latency_bucket(v_latency);
            v_ttft_bucket := canopy_latency_bucket(NEW.first_output_ms);
        END IF;
    ELSE
        IF NEW.usage IS DISTINCT FROM OLD.usage THEN
            v_before := coalesce(OLD.usage, '{}'::jsonb);
        END IF;
        IF OLD.finished_at IS NULL AND NEW.finished_at IS NOT NULL THEN
            v_runs := 1;
            v_finished := 1;
            v_errors := (NEW.status = 'error')::integer;
            v_latency := greatest(0, extract(epoch FROM NEW.finished_at - NEW.created_at) * 1000);
            v_bucket := canopy_latency_bucket(v_latency);
            v_ttft_bucket := canopy_latency_bucket(NEW.first_output_ms);
        END IF;
        IF v_finished = 0 AND v_before = v_usage THEN
            RETURN NULL;
        END IF;
    END IF;
    v_hist := array_fill(0, ARRAY[64]);
    IF v_bucket IS NOT NULL THEN
        v_hist[v_bucket] := 1;
    END IF;
    v_ttft := array_fill(0, ARRAY[64]);
    IF v_ttft_bucket IS NOT NULL THEN
        v_ttft[v_ttft_bucket] := 1;
    END IF;
    INSERT INTO run_stats_daily AS d (tenant_id, day, grain, key, runs, finished, errors, latency_ms_sum,
                                      latency_hist, ttft_hist, input_tokens, output_tokens, total_tokens, total_cost)
    SELECT NEW.tenant_id, (NEW.created_at AT TIME ZONE 'UTC')::date, k.grain, k.key,
           v_runs, v_finished, v_errors, v_latency, v_hist, v_ttft,
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
           ttft_hist = CASE WHEN v_ttft_bucket IS NULL THEN d.ttft_hist
                            ELSE (SELECT array_agg(coalesce(d.ttft_hist[i], 0) + EXCLUDED.ttft_hist[i] ORDER BY i)
                                    FROM generate_series(1, 64) AS i) END,
           input_tokens = d.input_tokens + EXCLUDED.input_tokens,
           output_tokens = d.output_tokens + EXCLUDED.output_tokens,
           total_tokens = d.total_tokens + EXCLUDED.total_tokens,
           total_cost = d.total_cost + EXCLUDED.total_cost;
    RETURN NULL;
END $function$;
