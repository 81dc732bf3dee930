-- Tenant names are unique, compared case-insensitively (issue 16): "Acme" and "acme" are one name to the people
-- who pick and read them, so the unique index is on lower("name") (no citext extension needed, and the stored name
-- keeps the case it was given). Creating or renaming a tenant to a taken name answers 409 tenant_name_taken.
--
-- A deployed database may already hold tenants of one name. The oldest of each name (created_at, then id) keeps
-- it; every other one is renamed "<name> (<its id>)" (the name cut to 161 characters first, to keep within the
-- 200 a name may have), unique because its id is, and the rename is written to the audit log as a system
-- tenant.rename (before/after names) so an operator can find and rename them again.

-- Across tenants (this transaction only): row-level security shows each tenant only itself.
SELECT set_config('canopy.admin', 'on', true);

WITH "duplicates" AS (
    SELECT "id", "name" AS "before", left("name", 161) || ' (' || "id"::text || ')' AS "after"
      FROM (SELECT "id", "name",
                   row_number() OVER (PARTITION BY lower("name") ORDER BY "created_at", "id") AS "rank"
              FROM "tenants") AS "ranked"
     WHERE "rank" > 1
), "renamed" AS (
    UPDATE "tenants" AS t SET "name" = d."after", "updated_at" = now()
      FROM "duplicates" AS d
     WHERE t."id" = d."id"
    RETURNING t."id", d."before", d."after"
)
INSERT INTO "audit_events" ("tenant_id", "actor", "action", "target_type", "target_id", "before", "after")
SELECT "id", '{"type":"system"}'::jsonb, 'tenant.rename', 'tenant', "id"::text,
       jsonb_build_object('name', "before"), jsonb_build_object('name', "after")
  FROM "renamed";

SELECT set_config('canopy.admin', '', true);

-- Listing by name still pages on ("name", "id") through tenants_name_idx; this one only answers "is it taken".
CREATE UNIQUE INDEX "tenants_name_lower_key" ON "tenants" (lower("name"));
