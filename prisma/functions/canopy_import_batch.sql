-- canopy_import_batch(p_tenant uuid, p_session text, p_token text, p_nodes jsonb, p_expires_at timestamp with time zone, p_timeout_ms integer)
--
-- Defined last by prisma/migrations/20261208600000_import_batch_function/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- One batch of a staged import's nodes (SessionCatalogStore.addImportNodes), in ONE statement: called in autocommit,
-- a batch costs one round trip instead of a transaction's four or five (on the embedded database, which runs one
-- transaction at a time, every round trip of an open transaction holds every other tenant's query up). Declares the
-- tenant and the import's token (the staged_import policy shows the staged session to it alone), moves the staged
-- session's expiry to p_expires_at when given, then inserts p_nodes ([{id, parentId, message, usage}] in id order,
-- each one's parent in the batch or an earlier one) with their path usages, as a commit does, all or none. Answers
-- the nodes inserted, or -1 when the staged session is gone (discarded, or published).
CREATE OR REPLACE FUNCTION public.canopy_import_batch(p_tenant uuid, p_session text, p_token text, p_nodes jsonb, p_expires_at timestamp with time zone, p_timeout_ms integer)
 RETURNS integer
 LANGUAGE plpgsql
 SET plan_cache_mode TO 'force_generic_plan'
AS $function$
DECLARE
    v_inserted INTEGER;
BEGIN
    PERFORM canopy_enter(p_tenant, p_timeout_ms);
    IF p_session IS NULL OR p_token IS NULL OR jsonb_typeof(p_nodes) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'canopy_import_batch: invalid arguments' USING ERRCODE = 'invalid_parameter_value';
    END IF;
    PERFORM set_config('canopy.import', p_token, true);

    -- 1. The staged session, still staged under this token (its expiry moved on when asked).
    IF p_expires_at IS NOT NULL THEN
        UPDATE sessions SET import_expires_at = p_expires_at
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session AND sessions.import_token = p_token;
    ELSE
        PERFORM 1 FROM sessions
         WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session AND sessions.import_token = p_token;
    END IF;
    IF NOT FOUND THEN
        RETURN -1;
    END IF;

    -- 2. The nodes, with their path usages.
    v_inserted := canopy_insert_nodes(p_tenant, p_session, p_nodes);
    -- The formats check the tree before (parents known and older): a node no walk reached is refused with its batch.
    IF v_inserted <> jsonb_array_length(p_nodes) THEN
        RAISE EXCEPTION 'canopy_import_batch: % of % nodes form a tree', v_inserted, jsonb_array_length(p_nodes)
              USING ERRCODE = 'invalid_parameter_value';
    END IF;
    RETURN v_inserted;
END
$function$;
