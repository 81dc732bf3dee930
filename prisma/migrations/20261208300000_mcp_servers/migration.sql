-- A tenant's MCP servers (the Model Context Protocol): each one's tools are offered to the agents of the sessions
-- that enable it by name. Headers (e.g. Authorization) are sealed like provider keys; only their names are kept in
-- the clear. The tools it last listed, when it was last reached and its last error are its state, written by the
-- process that talked to it (an api or a worker). An end user's own headers for a server that acts on their behalf
-- are sealed the same way, one row per (server, user).

CREATE TABLE public.mcp_servers (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    name text NOT NULL,
    url text NOT NULL,
    encrypted_headers text,
    header_names text[] DEFAULT '{}'::text[] NOT NULL,
    allowed_tools text[],
    approval jsonb DEFAULT '"never"'::jsonb NOT NULL,
    enabled boolean DEFAULT true NOT NULL,
    timeout_ms integer,
    user_credentials boolean DEFAULT false NOT NULL,
    tools jsonb,
    last_reached_at timestamp(3) with time zone,
    last_error text,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.mcp_servers FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.mcp_servers
    ADD CONSTRAINT mcp_servers_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX mcp_servers_tenant_name_key ON public.mcp_servers USING btree (tenant_id, name);

ALTER TABLE ONLY public.mcp_servers
    ADD CONSTRAINT mcp_servers_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.mcp_servers ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.mcp_servers USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE TABLE public.mcp_user_credentials (
    tenant_id uuid NOT NULL,
    server_id uuid NOT NULL,
    user_id text NOT NULL,
    encrypted_headers text NOT NULL,
    header_names text[] DEFAULT '{}'::text[] NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.mcp_user_credentials FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.mcp_user_credentials
    ADD CONSTRAINT mcp_user_credentials_pkey PRIMARY KEY (tenant_id, server_id, user_id);

ALTER TABLE ONLY public.mcp_user_credentials
    ADD CONSTRAINT mcp_user_credentials_server_id_fkey FOREIGN KEY (server_id) REFERENCES public.mcp_servers(id) ON DELETE CASCADE;

ALTER TABLE ONLY public.mcp_user_credentials
    ADD CONSTRAINT mcp_user_credentials_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.mcp_user_credentials ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.mcp_user_credentials USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));
