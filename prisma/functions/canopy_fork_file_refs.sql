-- canopy_fork_file_refs()
--
-- Defined last by prisma/migrations/20261209100000_files/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- A fork shares its source's files (no copy of their bytes): it refers to every file its source refers to (canopy_fork
-- names the source in metadata.forkedFrom) and its base, so deleting the source does not release them while the
-- fork lives.
CREATE OR REPLACE FUNCTION public.canopy_fork_file_refs()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
  INSERT INTO file_refs (tenant_id, file_id, session_id)
  SELECT r.tenant_id, r.file_id, NEW.id
    FROM file_refs r
   WHERE r.tenant_id = NEW.tenant_id
     AND r.session_id IN (NEW.base_session_id, NEW.metadata -> 'forkedFrom' ->> 'sessionId')
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END;
$function$;
