-- canopy_create_session: a session create in one round trip, its own transaction in autocommit, like the hot path's
-- functions (Database.callSql). It was BEGIN with the settings, the INSERT, and COMMIT: three round trips, each a
-- socket write and a turn of the api's event loop to wait for, which under load is most of a create's latency
-- (HTTP bench, 100 sessions). Same statement as before: create-if-absent, no row back when the id is taken in this
-- tenant; row-level security applies as to any statement of the tenant canopy_enter declares.

CREATE FUNCTION "canopy_create_session"(
    p_tenant UUID, p_id TEXT, p_user TEXT, p_title TEXT, p_model TEXT, p_system TEXT, p_opts JSONB, p_tools JSONB,
    p_metadata JSONB, p_idle_shutdown_after_ms INTEGER, p_timeout_ms INTEGER
) RETURNS SETOF "sessions"
    LANGUAGE plpgsql
    AS $$
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    RETURN QUERY
    INSERT INTO sessions (tenant_id, id, user_id, title, model, system, opts, tools, metadata, idle_shutdown_after_ms)
    VALUES (p_tenant, p_id, p_user, p_title, p_model, p_system, p_opts, p_tools, p_metadata, p_idle_shutdown_after_ms)
    ON CONFLICT (tenant_id, id) DO NOTHING
    RETURNING *;
END
$$;
