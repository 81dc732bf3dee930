-- A tenant's default MCP servers: the names a session created without opts.mcpServers takes (copied into its opts at
-- creation), NULL while unset. A JSON array of server names, as opts.mcpServers holds them.

ALTER TABLE public.tenant_settings ADD COLUMN mcp_servers jsonb;
