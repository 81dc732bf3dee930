-- Fewer checks per copied node (issue 15: fork cost). A node's tenant is already checked through its session: the
-- foreign key (tenant_id, session_id) -> sessions holds only for a session of that tenant, and sessions -> tenants
-- holds the tenant; deleting a tenant still deletes its nodes (tenants -> sessions -> nodes, both ON DELETE
-- CASCADE). The direct key nodes -> tenants cost one more lookup for every inserted node (about 15 us each: a
-- tenth of a 10,000-node fork) and guarded nothing the session key does not.

ALTER TABLE "nodes" DROP CONSTRAINT "nodes_tenant_id_fkey";
