-- canopy_forget_bases()
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
CREATE OR REPLACE FUNCTION public.canopy_forget_bases()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    UPDATE sessions AS fork SET base_session_id = NULL, base_node_ids = NULL
      FROM deleted_sessions AS deleted
     WHERE fork.tenant_id = deleted.tenant_id AND fork.base_session_id = deleted.id;
    RETURN NULL;
END
$function$;
