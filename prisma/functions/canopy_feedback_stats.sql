-- canopy_feedback_stats()
--
-- Defined last by prisma/migrations/20261209220000_run_stats_grains/migration.sql (first by 20261209210000_run_stats_daily).
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
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
