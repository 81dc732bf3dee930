-- Canopy initial schema: tenants, API keys, sessions, tree nodes and runs, with row-level security.

-- CreateEnum
CREATE TYPE "session_status" AS ENUM ('idle', 'busy', 'paused');

-- CreateEnum
CREATE TYPE "run_kind" AS ENUM ('prompt', 'branch', 'resume');

-- CreateEnum
CREATE TYPE "run_status" AS ENUM ('queued', 'running', 'paused', 'completed', 'cancelled', 'error');

-- CreateEnum
CREATE TYPE "message_role" AS ENUM ('user', 'assistant');

-- CreateTable
CREATE TABLE "tenants" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tenants_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "tenants_name_check" CHECK (length("name") BETWEEN 1 AND 200)
);

-- CreateTable
CREATE TABLE "api_keys" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "tenant_id" UUID NOT NULL,
    "name" TEXT,
    "prefix" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "sessions" (
    "tenant_id" UUID NOT NULL,
    "id" TEXT NOT NULL,
    "user_id" TEXT,
    "title" TEXT,
    "model" TEXT NOT NULL,
    "system" TEXT,
    "opts" JSONB NOT NULL DEFAULT '{}',
    "tools" JSONB NOT NULL DEFAULT '[]',
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "status" "session_status" NOT NULL DEFAULT 'idle',
    "path" INTEGER[] NOT NULL DEFAULT ARRAY[]::INTEGER[],
    "cursors" JSONB NOT NULL DEFAULT '{}',
    "head" INTEGER,
    "next_node_id" INTEGER NOT NULL DEFAULT 1,
    "usage" JSONB NOT NULL DEFAULT '{}',
    "idle_shutdown_after_ms" INTEGER,
    "active_run_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sessions_pkey" PRIMARY KEY ("tenant_id", "id"),
    CONSTRAINT "sessions_id_check" CHECK (length("id") BETWEEN 1 AND 128),
    CONSTRAINT "sessions_next_node_id_check" CHECK ("next_node_id" >= 1),
    CONSTRAINT "sessions_head_check" CHECK ("head" IS NULL OR "head" < "next_node_id")
);

-- CreateTable
CREATE TABLE "nodes" (
    "tenant_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "id" INTEGER NOT NULL,
    "parent_id" INTEGER,
    "role" "message_role" NOT NULL,
    "message" JSONB NOT NULL,
    "usage" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "nodes_pkey" PRIMARY KEY ("tenant_id", "session_id", "id"),
    CONSTRAINT "nodes_id_check" CHECK ("id" >= 1),
    -- A parent is always older than its child: the tree can hold no cycle.
    CONSTRAINT "nodes_parent_check" CHECK ("parent_id" IS NULL OR "parent_id" < "id")
);

-- CreateTable
CREATE TABLE "runs" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "tenant_id" UUID NOT NULL,
    "session_id" TEXT NOT NULL,
    "kind" "run_kind" NOT NULL,
    "status" "run_status" NOT NULL DEFAULT 'queued',
    "input" JSONB NOT NULL DEFAULT '{}',
    "pending" JSONB,
    "error" JSONB,
    "usage" JSONB NOT NULL DEFAULT '{}',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "runs_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_tenant_id_idx" ON "api_keys"("tenant_id");

-- CreateIndex
CREATE INDEX "sessions_tenant_updated_idx" ON "sessions"("tenant_id", "updated_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "sessions_tenant_user_updated_idx" ON "sessions"("tenant_id", "user_id", "updated_at" DESC, "id" DESC);

-- CreateIndex
CREATE INDEX "sessions_metadata_idx" ON "sessions" USING GIN ("metadata" jsonb_path_ops);

-- CreateIndex
CREATE INDEX "nodes_children_idx" ON "nodes"("tenant_id", "session_id", "parent_id");

-- CreateIndex
CREATE INDEX "runs_session_idx" ON "runs"("tenant_id", "session_id", "created_at" DESC);

-- AddForeignKey
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "sessions" ADD CONSTRAINT "sessions_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "nodes" ADD CONSTRAINT "nodes_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "nodes" ADD CONSTRAINT "nodes_tenant_id_session_id_fkey" FOREIGN KEY ("tenant_id", "session_id") REFERENCES "sessions"("tenant_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "nodes" ADD CONSTRAINT "nodes_tenant_id_session_id_parent_id_fkey" FOREIGN KEY ("tenant_id", "session_id", "parent_id") REFERENCES "nodes"("tenant_id", "session_id", "id") ON DELETE CASCADE ON UPDATE NO ACTION;

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_tenant_id_fkey" FOREIGN KEY ("tenant_id") REFERENCES "tenants"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "runs" ADD CONSTRAINT "runs_tenant_id_session_id_fkey" FOREIGN KEY ("tenant_id", "session_id") REFERENCES "sessions"("tenant_id", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Row-level security. The app sets these per transaction (set_config(..., true)):
--   canopy.tenant_id  the tenant a transaction acts for;
--   canopy.admin      'on' only for the few named cross-tenant operations (admin routes, recovery sweeps);
--   canopy.key_hash   the hash of the API key being authenticated (lets that one key row be read).
-- A transaction that set none of them sees and writes nothing. FORCE applies the policies to the table owner too;
-- only a superuser or a BYPASSRLS role could skip them, and the app's role is neither.
CREATE FUNCTION "canopy_current_tenant"() RETURNS UUID
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT NULLIF(current_setting('canopy.tenant_id', true), '')::uuid $$;

CREATE FUNCTION "canopy_is_admin"() RETURNS BOOLEAN
    LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT coalesce(current_setting('canopy.admin', true), '') = 'on' $$;

ALTER TABLE "tenants" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "tenants" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "tenants"
    USING ("id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "api_keys" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "api_keys" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "api_keys"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());
CREATE POLICY "key_lookup" ON "api_keys" FOR SELECT
    USING ("key_hash" = NULLIF(current_setting('canopy.key_hash', true), ''));

ALTER TABLE "sessions" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "sessions" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "sessions"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "nodes" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "nodes" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "nodes"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());

ALTER TABLE "runs" ENABLE ROW LEVEL SECURITY;
ALTER TABLE "runs" FORCE ROW LEVEL SECURITY;
CREATE POLICY "tenant_isolation" ON "runs"
    USING ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"())
    WITH CHECK ("tenant_id" = "canopy_current_tenant"() OR "canopy_is_admin"());
