-- Summaries of the oldest turns of a conversation (the context policy `summarize`): the summary of the path from the
-- root to a node, stored against (session, node), serves every branch below that node.

CREATE TABLE public.context_summaries (
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    through_node_id integer NOT NULL,
    text text NOT NULL,
    tokens integer NOT NULL,
    model text NOT NULL,
    usage jsonb NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.context_summaries FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.context_summaries
    ADD CONSTRAINT context_summaries_pkey PRIMARY KEY (tenant_id, session_id, through_node_id);

ALTER TABLE ONLY public.context_summaries
    ADD CONSTRAINT context_summaries_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON UPDATE CASCADE ON DELETE CASCADE;

ALTER TABLE public.context_summaries ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.context_summaries USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));
