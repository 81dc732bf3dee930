-- The hot path's functions plan their statements once per connection (generic plans) instead of on every call.
--
-- PL/pgSQL keeps a plan per statement, and Postgres's plan cache builds a custom plan (one made for the call's
-- parameter values) for a statement's first five executions on a connection, then goes on making custom plans
-- whenever the generic plan's estimated cost is above theirs. Custom plans drop the branches the call's arguments
-- switch off (canopy_session_nodes's `p_ids IS NULL` and fork branches, `p_user IS NULL`, `p_finish IS NULL`),
-- which the generic plan keeps behind one-time filters that cost nothing when run, so on a young database (small
-- tables) they kept winning and every call planned its statements again. Server CPU per call (log_statement_stats):
-- HTTP bench, warm connections on analyzed tables: a commit's second to sixth executions on a connection 6.6 ->
-- 1.9 ms (median), the later ones unchanged (1.53 and 1.56 ms: generic plans were chosen there); pgbench on small
-- tables, 10 runs (start and commit of a two-node turn) per new connection: a commit 3.4-4.5 -> 1.5-2.2 ms from the
-- seventh run on, 4.9-5.7 -> 2.1-2.5 ms with a 200-word reply.
--
-- The setting applies while each function runs (its own statements and the triggers they fire) and is restored
-- when it returns; nothing else the connection runs is affected. A generic plan is made on the first call and
-- remade when the statistics of a table it reads change (the store's table upkeep analyzes tables as they grow
-- from empty), as a custom plan would have been.
ALTER FUNCTION canopy_start_run(uuid, text, text, uuid, run_kind, jsonb, run_status, jsonb, jsonb, integer, integer, jsonb)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION canopy_load_run(uuid, text, text, uuid, integer)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION canopy_commit(uuid, text, text, uuid, jsonb, jsonb, integer, jsonb, jsonb, integer, text)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION canopy_create_session(uuid, text, text, text, text, text, jsonb, jsonb, jsonb, integer, integer)
    SET plan_cache_mode = force_generic_plan;
