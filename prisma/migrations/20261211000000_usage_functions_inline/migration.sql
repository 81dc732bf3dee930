-- canopy_usage and canopy_usage_add become single expressions that the planner inlines into the statements calling
-- them (canopy_commit, canopy_start_run's callers, the usage triggers), planned once with them. As functions with a
-- FROM clause (and a SET clause) they could not be inlined: Postgres planned their bodies again on every call, and
-- they were a third of Postgres's CPU per run (pg_stat_user_functions over 1,270 runs of start + commit:
-- canopy_usage 3 calls a run at 0.21-0.28 ms each, canopy_usage_add 0.2 ms of its own; the run's backend CPU 3.2
-- ms). Same results: each field a number or 0, a missing total the sum of its parts, sums field by field in float8.
-- STABLE, not IMMUTABLE: jsonb_build_object is stable (an immutable function's body may not call it and still be
-- inlined), and their printed floats now depend on the session's extra_float_digits, which STABLE allows.
-- The `SET extra_float_digits = 1` that kept their float8 output the shortest exact digits (so SQL sums equal
-- JavaScript's to the last bit) is now the connection's: the service's pool sets it on every connection it opens
-- (libs/store/src/database.ts), over any server default.

CREATE OR REPLACE FUNCTION "canopy_usage"(u JSONB) RETURNS JSONB
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT jsonb_build_object(
        'inputTokens', COALESCE(canopy_usage_number(u, 'inputTokens'), 0),
        'outputTokens', COALESCE(canopy_usage_number(u, 'outputTokens'), 0),
        'cacheReadTokens', COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0),
        'cacheWriteTokens', COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0),
        'totalTokens', COALESCE(canopy_usage_number(u, 'totalTokens'),
                        COALESCE(canopy_usage_number(u, 'inputTokens'), 0) + COALESCE(canopy_usage_number(u, 'outputTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteTokens'), 0)),
        'inputCost', COALESCE(canopy_usage_number(u, 'inputCost'), 0),
        'outputCost', COALESCE(canopy_usage_number(u, 'outputCost'), 0),
        'cacheReadCost', COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0),
        'cacheWriteCost', COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0),
        'totalCost', COALESCE(canopy_usage_number(u, 'totalCost'),
                        COALESCE(canopy_usage_number(u, 'inputCost'), 0) + COALESCE(canopy_usage_number(u, 'outputCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(u, 'cacheWriteCost'), 0)))
$$;

CREATE OR REPLACE FUNCTION "canopy_usage_add"(a JSONB, b JSONB) RETURNS JSONB
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$
    SELECT jsonb_build_object(
        'inputTokens', COALESCE(canopy_usage_number(a, 'inputTokens'), 0) + COALESCE(canopy_usage_number(b, 'inputTokens'), 0),
        'outputTokens', COALESCE(canopy_usage_number(a, 'outputTokens'), 0) + COALESCE(canopy_usage_number(b, 'outputTokens'), 0),
        'cacheReadTokens', COALESCE(canopy_usage_number(a, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadTokens'), 0),
        'cacheWriteTokens', COALESCE(canopy_usage_number(a, 'cacheWriteTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteTokens'), 0),
        'totalTokens', COALESCE(canopy_usage_number(a, 'totalTokens'),
                        COALESCE(canopy_usage_number(a, 'inputTokens'), 0) + COALESCE(canopy_usage_number(a, 'outputTokens'), 0) + COALESCE(canopy_usage_number(a, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(a, 'cacheWriteTokens'), 0))
        + COALESCE(canopy_usage_number(b, 'totalTokens'),
                        COALESCE(canopy_usage_number(b, 'inputTokens'), 0) + COALESCE(canopy_usage_number(b, 'outputTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadTokens'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteTokens'), 0)),
        'inputCost', COALESCE(canopy_usage_number(a, 'inputCost'), 0) + COALESCE(canopy_usage_number(b, 'inputCost'), 0),
        'outputCost', COALESCE(canopy_usage_number(a, 'outputCost'), 0) + COALESCE(canopy_usage_number(b, 'outputCost'), 0),
        'cacheReadCost', COALESCE(canopy_usage_number(a, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadCost'), 0),
        'cacheWriteCost', COALESCE(canopy_usage_number(a, 'cacheWriteCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteCost'), 0),
        'totalCost', COALESCE(canopy_usage_number(a, 'totalCost'),
                        COALESCE(canopy_usage_number(a, 'inputCost'), 0) + COALESCE(canopy_usage_number(a, 'outputCost'), 0) + COALESCE(canopy_usage_number(a, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(a, 'cacheWriteCost'), 0))
        + COALESCE(canopy_usage_number(b, 'totalCost'),
                        COALESCE(canopy_usage_number(b, 'inputCost'), 0) + COALESCE(canopy_usage_number(b, 'outputCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheReadCost'), 0) + COALESCE(canopy_usage_number(b, 'cacheWriteCost'), 0)))
$$;
