-- canopy_create_session(p_tenant uuid, p_id text, p_user text, p_title text, p_model text, p_system text, p_opts jsonb, p_tools jsonb, p_metadata jsonb, p_idle_shutdown_after_ms integer, p_timeout_ms integer)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
CREATE OR REPLACE FUNCTION public.canopy_create_session(p_tenant uuid, p_id text, p_user text, p_title text, p_model text, p_system text, p_opts jsonb, p_tools jsonb, p_metadata jsonb, p_idle_shutdown_after_ms integer, p_timeout_ms integer)
 RETURNS SETOF sessions
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    RETURN QUERY
    INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata, idle_shutdown_after_ms)
    VALUES (p_tenant, p_id, p_user, p_title, p_model, p_system, p_opts, p_tools, p_metadata, p_idle_shutdown_after_ms)
    ON CONFLICT (tenant_id, id) DO NOTHING
    RETURNING *;
END
$function$;
