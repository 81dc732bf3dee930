-- A storage quota: the bytes of a tenant's (or one of its users') stored files at any moment (metric `storage`).
-- Uploads past it are refused as they stream; runs never look at it.

ALTER TABLE public.quotas DROP CONSTRAINT quotas_metric_check;

ALTER TABLE public.quotas
    ADD CONSTRAINT quotas_metric_check CHECK ((metric = ANY (ARRAY['tokens'::text, 'cost'::text, 'runs'::text, 'storage'::text])));
