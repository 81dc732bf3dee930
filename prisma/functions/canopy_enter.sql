-- canopy_enter(p_tenant uuid, p_timeout_ms integer)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- Declares the tenant a hot-path function acts for and bounds its lock waits by the store's transaction
-- deadline, both transaction-local (set_config(..., true)): in autocommit, the calling statement only (called
-- inside an explicit transaction, they would stay for the rest of it, like withTenantSql's own settings).
--
-- Why lock_timeout and not the statement/idle timeouts of the BEGIN road: statement_timeout is armed when a
-- statement starts, so setting it inside the statement bounds only the next one, and one statement has no idle
-- time for idle_in_transaction_session_timeout to bound. What can hold one of these short statements is a row
-- lock, and lock_timeout applies to every lock wait that follows it (SQLSTATE 55P03; the store maps it to
-- unavailable like its other deadlines).
CREATE OR REPLACE FUNCTION public.canopy_enter(p_tenant uuid, p_timeout_ms integer)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF p_tenant IS NULL THEN
        RAISE EXCEPTION 'canopy: a tenant id is required' USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF p_timeout_ms IS NULL OR p_timeout_ms < 1 THEN
        RAISE EXCEPTION 'canopy: the timeout must be at least 1 ms, not %', p_timeout_ms
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('canopy.tenant_id', p_tenant::text, true),
            set_config('lock_timeout', p_timeout_ms::text, true);
END
$function$;
