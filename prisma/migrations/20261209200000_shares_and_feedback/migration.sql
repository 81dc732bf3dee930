-- Share links and feedback on replies.
--
-- A share is a pointer, not a copy: the path root -> node_id of its session (`path`, the ids as they were when it
-- was made). Nodes are never changed (an edit or a regeneration adds nodes beside them), so that path reads the
-- same for as long as the session exists: later messages and other branches are not on it. The share goes with its
-- session (deleted by hand, in bulk or by the tenant's retention): no copy of a conversation outlives it. The link's
-- token is kept as its sha256 only.
--
-- Feedback: one rating per (session, reply node, rater), the rater being an end user or, for a tenant key rating
-- for nobody in particular, no one (''); the turn it rates (prompt and reply text, usage, the session's model) is
-- kept with it, read once from the immutable nodes when it is given. It also goes with its session.

CREATE TABLE public.shares (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    node_id integer NOT NULL,
    path integer[] NOT NULL,
    token_hash text NOT NULL,
    title text,
    include_usage boolean DEFAULT false NOT NULL,
    user_id text,
    actor jsonb,
    expires_at timestamp(3) with time zone,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.shares FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX shares_token_hash_key ON public.shares USING btree (token_hash);

CREATE INDEX shares_tenant_created_idx ON public.shares USING btree (tenant_id, created_at DESC, id DESC);

CREATE INDEX shares_session_idx ON public.shares USING btree (tenant_id, session_id);

ALTER TABLE ONLY public.shares
    ADD CONSTRAINT shares_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE public.shares ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.shares USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE TABLE public.feedback (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    session_id text NOT NULL,
    node_id integer NOT NULL,
    user_id text,
    rating text NOT NULL,
    comment text,
    tags text[] DEFAULT '{}'::text[] NOT NULL,
    model text NOT NULL,
    prompt_node_id integer NOT NULL,
    prompt text NOT NULL,
    reply text NOT NULL,
    usage jsonb DEFAULT '{}'::jsonb NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    updated_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    CONSTRAINT feedback_rating_check CHECK ((rating = ANY (ARRAY['up'::text, 'down'::text])))
);

ALTER TABLE ONLY public.feedback FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.feedback
    ADD CONSTRAINT feedback_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX feedback_rater_key ON public.feedback USING btree (tenant_id, session_id, node_id, (COALESCE(user_id, ''::text)));

CREATE INDEX feedback_tenant_created_idx ON public.feedback USING btree (tenant_id, created_at DESC, id DESC);

CREATE INDEX feedback_tenant_model_idx ON public.feedback USING btree (tenant_id, model, created_at);

ALTER TABLE ONLY public.feedback
    ADD CONSTRAINT feedback_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE public.feedback ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.feedback USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));
