-- A tenant's settings: the defaults its new sessions take (the context policy of a session created without
-- opts.context), one row per tenant, absent until first set. One column per default, NULL while unset.

CREATE TABLE public.tenant_settings (
    tenant_id uuid NOT NULL,
    context jsonb,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.tenant_settings FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.tenant_settings
    ADD CONSTRAINT tenant_settings_pkey PRIMARY KEY (tenant_id);

ALTER TABLE ONLY public.tenant_settings
    ADD CONSTRAINT tenant_settings_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.tenant_settings ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.tenant_settings USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));
