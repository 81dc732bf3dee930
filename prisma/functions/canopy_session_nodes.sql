-- canopy_session_nodes(p_tenant uuid, p_session text, p_ids integer[])
--
-- Defined last by prisma/migrations/20261208000000_node_token_counts/migration.sql (first by 20261206000000_baseline).
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The nodes of a session, real and virtual (as in 20261209000000_cow_forks), now with their path usages, and read
-- by primary key whatever the statistics say. Joined with unnest(p_ids), the wanted nodes were a join the planner
-- was free to turn around: with statistics from many small sessions (a tenant's 20,000 ten-node sessions) it
-- estimated one row per session and scanned all the nodes of a 10,000-node session for each wanted id (a fork's tip:
-- 12 ms instead of 0.05; a run's path, a commit's parents the same way). Wanted real nodes are now an index
-- condition (id = ANY (p_ids), each id once), wanted virtual ones one primary-key probe each (a LATERAL the
-- planner may not pull up: OFFSET 0).
CREATE OR REPLACE FUNCTION public.canopy_session_nodes(p_tenant uuid, p_session text, p_ids integer[] DEFAULT NULL::integer[])
 RETURNS SETOF nodes
 LANGUAGE sql
 STABLE
AS $function$
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
    UNION ALL
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NOT NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
       AND nodes.id = ANY (p_ids)
    UNION ALL
    SELECT p_tenant, p_session, shared.id, NULLIF(shared.id - 1, 0), source.role, source.message, source.usage,
           source.created_at, source.path_usage, source.tokens
      FROM sessions
     CROSS JOIN LATERAL (
            SELECT step.ord::integer AS id, step.node_id
              FROM unnest(sessions.base_node_ids) WITH ORDINALITY AS step(node_id, ord)
             WHERE p_ids IS NULL
            UNION ALL
            SELECT wanted.id, sessions.base_node_ids[wanted.id]
              FROM unnest(p_ids) AS wanted(id)
             WHERE wanted.id BETWEEN 1 AND cardinality(sessions.base_node_ids)
           ) AS shared
     CROSS JOIN LATERAL (
            SELECT base.* FROM nodes AS base
             WHERE base.tenant_id = p_tenant AND base.session_id = sessions.base_session_id
               AND base.id = shared.node_id
            OFFSET 0
           ) AS source
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session AND sessions.base_session_id IS NOT NULL
$function$;
