-- canopy_webhook_enqueue(p_tenant uuid, p_type text, p_data jsonb)
--
-- Defined last by prisma/migrations/20261209400000_webhook_trace_context/migration.sql (first by 20261206000000_baseline).
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- canopy_webhook_enqueue: the outbox writer keeps the transaction's declared trace context (canopy.traceparent).
CREATE OR REPLACE FUNCTION public.canopy_webhook_enqueue(p_tenant uuid, p_type text, p_data jsonb)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO webhook_deliveries (tenant_id, webhook_id, event_type, payload, trace_context)
    SELECT w.tenant_id, w.id, p_type,
           jsonb_build_object('type', p_type,
                              'timestamp', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
                              'data', p_data || jsonb_build_object('tenantId', p_tenant)),
           nullif(current_setting('canopy.traceparent', true), '')
      FROM webhooks w
     WHERE w.tenant_id = p_tenant AND w.enabled AND p_type = ANY (w.events)
       -- Not while the tenant itself is being deleted (its endpoints go with it).
       AND EXISTS (SELECT 1 FROM tenants t WHERE t.id = p_tenant);
END $function$;
