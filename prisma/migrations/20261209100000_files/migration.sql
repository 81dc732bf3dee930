-- Files: what a tenant's users upload (attachments a prompt refers to by id), stored apart from the messages that
-- refer to them. `files` is the metadata of each one (its tenant, its user when a user token uploaded it, its name,
-- the media type sniffed from its bytes, its size and sha256) and where its bytes are (`storage`, `storage_key`);
-- `file_chunks` holds the bytes of the files kept in Postgres (the embedded default), in chunks written and read one
-- at a time, never whole in memory. `file_refs` says which sessions refer to a file (a prompt's attachment, a fork
-- of such a session, an import): a file that was referred to and no longer is, or that was deleted, is removed by
-- the sweep once no session refers to it. Every table is guarded by row-level security like the others.

CREATE TABLE public.files (
    id uuid DEFAULT gen_random_uuid() NOT NULL,
    tenant_id uuid NOT NULL,
    user_id text,
    name text NOT NULL,
    media_type text NOT NULL,
    bytes bigint DEFAULT 0 NOT NULL,
    sha256 text,
    storage text NOT NULL,
    storage_key text NOT NULL,
    status text DEFAULT 'uploading'::text NOT NULL,
    referenced_at timestamp(3) with time zone,
    deleted_at timestamp(3) with time zone,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL,
    CONSTRAINT files_status_check CHECK ((status = ANY (ARRAY['uploading'::text, 'ready'::text]))),
    CONSTRAINT files_storage_check CHECK ((storage = ANY (ARRAY['postgres'::text, 's3'::text])))
);

ALTER TABLE ONLY public.files FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.files
    ADD CONSTRAINT files_pkey PRIMARY KEY (id);

CREATE UNIQUE INDEX files_tenant_id_key ON public.files USING btree (tenant_id, id);

CREATE INDEX files_tenant_created_idx ON public.files USING btree (tenant_id, created_at DESC, id DESC);

CREATE INDEX files_released_idx ON public.files USING btree (tenant_id) WHERE ((referenced_at IS NOT NULL) OR (deleted_at IS NOT NULL));

ALTER TABLE ONLY public.files
    ADD CONSTRAINT files_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.files ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.files USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE TABLE public.file_chunks (
    tenant_id uuid NOT NULL,
    storage_key text NOT NULL,
    seq integer NOT NULL,
    data bytea NOT NULL
);

-- Uploads are mostly compressed already (images, PDFs): kept out of line without another compression attempt.
ALTER TABLE ONLY public.file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

ALTER TABLE ONLY public.file_chunks FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.file_chunks
    ADD CONSTRAINT file_chunks_pkey PRIMARY KEY (tenant_id, storage_key, seq);

ALTER TABLE ONLY public.file_chunks
    ADD CONSTRAINT file_chunks_tenant_id_fkey FOREIGN KEY (tenant_id) REFERENCES public.tenants(id) ON DELETE CASCADE;

ALTER TABLE public.file_chunks ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.file_chunks USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

CREATE TABLE public.file_refs (
    tenant_id uuid NOT NULL,
    file_id uuid NOT NULL,
    session_id text NOT NULL,
    created_at timestamp(3) with time zone DEFAULT CURRENT_TIMESTAMP NOT NULL
);

ALTER TABLE ONLY public.file_refs FORCE ROW LEVEL SECURITY;

ALTER TABLE ONLY public.file_refs
    ADD CONSTRAINT file_refs_pkey PRIMARY KEY (tenant_id, file_id, session_id);

CREATE INDEX file_refs_session_idx ON public.file_refs USING btree (tenant_id, session_id);

ALTER TABLE ONLY public.file_refs
    ADD CONSTRAINT file_refs_file_fkey FOREIGN KEY (tenant_id, file_id) REFERENCES public.files(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE ONLY public.file_refs
    ADD CONSTRAINT file_refs_session_fkey FOREIGN KEY (tenant_id, session_id) REFERENCES public.sessions(tenant_id, id) ON DELETE CASCADE;

ALTER TABLE public.file_refs ENABLE ROW LEVEL SECURITY;

CREATE POLICY tenant_isolation ON public.file_refs USING (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin())) WITH CHECK (((tenant_id = public.canopy_current_tenant()) OR public.canopy_is_admin()));

-- A fork shares its source's files (no copy of their bytes): it refers to every file its source refers to (canopy_fork
-- names the source in metadata.forkedFrom) and its base, so deleting the source does not release them while the
-- fork lives.
CREATE FUNCTION public.canopy_fork_file_refs() RETURNS trigger
    LANGUAGE plpgsql
    AS $$
BEGIN
  INSERT INTO file_refs (tenant_id, file_id, session_id)
  SELECT r.tenant_id, r.file_id, NEW.id
    FROM file_refs r
   WHERE r.tenant_id = NEW.tenant_id
     AND r.session_id IN (NEW.base_session_id, NEW.metadata -> 'forkedFrom' ->> 'sessionId')
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END;
$$;

CREATE TRIGGER sessions_fork_file_refs AFTER INSERT ON public.sessions FOR EACH ROW WHEN (((new.base_session_id IS NOT NULL) OR (new.metadata ? 'forkedFrom'::text))) EXECUTE FUNCTION public.canopy_fork_file_refs();
