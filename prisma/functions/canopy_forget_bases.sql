-- canopy_forget_bases()
--
-- Defined last by prisma/migrations/20261209000000_cow_forks/migration.sql.
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, ALTER, or DROP and CREATE for a new signature) AND this file.
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
