-- Finding, forking and expiring conversations (issue 15).
--
-- 1. Full-text search over message text. Each node's text blocks become a tsvector in `node_search` (one row per
--    node with text; written by a statement trigger on `nodes`, so every road that inserts nodes -- a commit, a
--    fork, an import -- indexes them, and deleted sessions take their rows with them by cascade: search reads the
--    same rows, nothing to keep in step). Why a table of its own and why its SELECT policy holds the query:
--    under forced row-level security the planner may use an index for a condition only if the condition is
--    leakproof or is part of the policy (restriction_is_securely_promotable); the text-search match `@@`
--    (ts_match_vq) is not leakproof, and only a superuser could mark it so. So the query travels as a transaction
--    setting, `canopy.search`, exactly as the tenant does, and node_search's one SELECT policy is
--    `tenant_id = <the tenant> AND search @@ <the query>`: both conditions are policy conditions, and the GIN
--    index on (tenant_id, search) answers them (btree_gin lets the tenant be a GIN key: a term common in other
--    tenants costs this tenant nothing). A transaction that set no query sees no row of node_search at all.
-- 2. Pinned sessions and a tenant's retention policy (the sweeper deletes what is older).

ALTER TABLE "sessions" ADD COLUMN "pinned" BOOLEAN NOT NULL DEFAULT false;

ALTER TABLE "tenants"
    ADD COLUMN "retention_delete_after_days" INTEGER,
    ADD COLUMN "retention_keep" TEXT NOT NULL DEFAULT 'pinned',
    ADD CONSTRAINT "tenants_retention_days_check"
        CHECK ("retention_delete_after_days" IS NULL OR "retention_delete_after_days" BETWEEN 1 AND 36500),
    ADD CONSTRAINT "tenants_retention_keep_check" CHECK ("retention_keep" IN ('none', 'pinned'));

-- btree_gin is a trusted extension: the database's owner may create it without superuser.
CREATE EXTENSION IF NOT EXISTS "btree_gin";

-- The searchable text of a message: its text blocks in order, blank-line separated, cut at 100,000 characters
-- (a tsvector holds at most 1 MB; 100,000 characters of the worst text stay well under it, so no commit can fail
-- for being too long to index).
CREATE FUNCTION "canopy_message_text"(message JSONB) RETURNS TEXT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT left(COALESCE(string_agg(block.value ->> 'text', E'\n\n' ORDER BY block.ordinality), ''), 100000)
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(message -> 'content') = 'array'
                                     THEN message -> 'content' ELSE '[]'::jsonb END) WITH ORDINALITY AS block
     WHERE block.value ->> 'type' = 'text' AND jsonb_typeof(block.value -> 'text') = 'string'
$$;

-- The words of a message, as every tsvector and query reads them: configuration `simple` (lower-cased words, no
-- stemming and no stop words), the same for every language a tenant's users write in. The text blocks' strings go
-- to to_tsvector as a jsonb array (C code throughout: a copied path of thousands of nodes is indexed in
-- milliseconds); a message too large for that to stay under a tsvector's 1 MB takes the cut text instead.
CREATE FUNCTION "canopy_search_vector"(message JSONB) RETURNS TSVECTOR
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$
    SELECT CASE WHEN pg_column_size(message) <= 65536
                THEN to_tsvector('simple'::regconfig,
                                 jsonb_path_query_array(message, '$.content[*] ? (@.type == "text").text'))
                ELSE to_tsvector('simple'::regconfig, canopy_message_text(message)) END
$$;

-- The query of the current transaction's search (set_config('canopy.search', <tsquery text>, true)); NULL when
-- none is set, and then node_search shows nothing.
CREATE FUNCTION "canopy_search_query"() RETURNS TSQUERY
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT NULLIF(current_setting('canopy.search', true), '')::tsquery $$;

CREATE TABLE "node_search" (
    "tenant_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "node_id" INTEGER NOT NULL,
    "search" TSVECTOR NOT NULL,

    CONSTRAINT "node_search_pkey" PRIMARY KEY ("tenant_id", "session_id", "node_id"),
    CONSTRAINT "node_search_node_fkey" FOREIGN KEY ("tenant_id", "session_id", "node_id")
        REFERENCES "nodes" ("tenant_id", "session_id", "id") ON DELETE CASCADE ON UPDATE CASCADE
);

CREATE INDEX "node_search_idx" ON "node_search" USING GIN ("tenant_id", "search");

ALTER TABLE "node_search" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "node_search" FORCE ROW LEVEL SECURITY;
CREATE POLICY "search" ON "node_search" FOR SELECT
    USING ("tenant_id" = "canopy_current_tenant"() AND "search" @@ "canopy_search_query"());
CREATE POLICY "tenant_insert" ON "node_search" FOR INSERT
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());
CREATE POLICY "tenant_delete" ON "node_search" FOR DELETE
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

-- Indexes the nodes one INSERT statement added (a commit's turn, a fork's path, an import's tree) in one
-- statement; nodes without text get no row.
CREATE FUNCTION "canopy_index_nodes"() RETURNS TRIGGER
    LANGUAGE plpgsql
    AS $$
BEGIN
    INSERT INTO node_search (tenant_id, session_id, node_id, search)
    SELECT added.tenant_id, added.session_id, added.id, indexed.search
      FROM added_nodes AS added
     CROSS JOIN LATERAL (SELECT canopy_search_vector(added.message) AS search) AS indexed
     WHERE indexed.search <> ''::tsvector;
    RETURN NULL;
END
$$;

CREATE TRIGGER "nodes_index_search" AFTER INSERT ON "nodes"
    REFERENCING NEW TABLE AS added_nodes
    FOR EACH STATEMENT EXECUTE FUNCTION "canopy_index_nodes"();

-- The nodes stored before this migration, indexed across tenants (this transaction only).
SELECT set_config('canopy.admin', 'on', true);
INSERT INTO "node_search" ("tenant_id", "session_id", "node_id", "search")
SELECT "tenant_id", "session_id", "id", canopy_search_vector("message") FROM "nodes"
 WHERE canopy_search_vector("message") <> ''::tsvector;
SELECT set_config('canopy.admin', '', true);
