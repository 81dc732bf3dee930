-- canopy_materialize_forks()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- Before a session is deleted, its forks get their shared nodes as real rows (same ids, parents, messages, usage
-- and times). Not when its tenant is being deleted: the forks go too.
CREATE OR REPLACE FUNCTION public.canopy_materialize_forks()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    IF EXISTS (SELECT 1 FROM sessions WHERE sessions.tenant_id = OLD.tenant_id AND sessions.base_session_id = OLD.id)
       AND EXISTS (SELECT 1 FROM tenants WHERE tenants.id = OLD.tenant_id) THEN
        INSERT INTO nodes (tenant_id, session_id, id, parent_id, role, message, usage, created_at, path_usage)
        SELECT fork.tenant_id, fork.id, step.ord::integer, NULLIF(step.ord::integer - 1, 0), source.role,
               source.message, source.usage, source.created_at, source.path_usage
          FROM sessions AS fork
         CROSS JOIN LATERAL unnest(fork.base_node_ids) WITH ORDINALITY AS step(node_id, ord)
          JOIN nodes AS source ON source.tenant_id = OLD.tenant_id AND source.session_id = OLD.id
                              AND source.id = step.node_id
         WHERE fork.tenant_id = OLD.tenant_id AND fork.base_session_id = OLD.id;
    END IF;
    RETURN OLD;
END
$function$;
