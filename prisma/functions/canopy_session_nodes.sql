-- canopy_session_nodes(p_tenant uuid, p_session text, p_ids integer[])
--
-- Defined last by prisma/migrations/20261212000000_fork_path_usage/migration.sql (first by 20261209000000_cow_forks).
-- Generated from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
-- A change is a new migration (CREATE OR REPLACE, or DROP and CREATE for a new signature) AND this file.
--
-- The nodes of a session, real and virtual; all of them, or those of p_ids (ids not found are left out). One SQL
-- statement that the planner inlines into the caller's: `p_ids IS NULL` picks the arms at plan or run time, each
-- arm reading by primary key (a wanted virtual node is one lookup, base_node_ids[id]).
CREATE OR REPLACE FUNCTION public.canopy_session_nodes(p_tenant uuid, p_session text, p_ids integer[] DEFAULT NULL::integer[])
 RETURNS SETOF nodes
 LANGUAGE sql
 STABLE
AS $function$
    SELECT nodes.* FROM nodes
     WHERE p_ids IS NULL AND nodes.tenant_id = p_tenant AND nodes.session_id = p_session
    UNION ALL
    SELECT nodes.* FROM unnest(p_ids) AS wanted(id)
      JOIN nodes ON nodes.tenant_id = p_tenant AND nodes.session_id = p_session AND nodes.id = wanted.id
    UNION ALL
    SELECT p_tenant, p_session, shared.id, NULLIF(shared.id - 1, 0), source.role, source.message, source.usage,
           source.created_at, source.path_usage
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
      JOIN nodes AS source ON source.tenant_id = p_tenant AND source.session_id = sessions.base_session_id
                          AND source.id = shared.node_id
     WHERE sessions.tenant_id = p_tenant AND sessions.id = p_session AND sessions.base_session_id IS NOT NULL
$function$;
