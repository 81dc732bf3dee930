-- canopy_runs_usage()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
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
