-- Files stored from a prompt's inline data. The session refers to such a file as the prompt is taken, before any
-- message does; a prompt whose run fails or is cancelled before its commit would leave it referred to by nothing but
-- the session, for as long as the session lives. `from_prompt_at` says when it was stored; the file sweep looks at
-- it once a grace period has passed: a committed message that refers to it clears the mark (the file is then kept
-- like any other), a run or queued prompt still on its way keeps it, and otherwise it is released. Files uploaded
-- through POST /v1/files or restored by an import are never marked.

ALTER TABLE public.files ADD COLUMN from_prompt_at timestamp(3) with time zone;

CREATE INDEX files_from_prompt_idx ON public.files USING btree (from_prompt_at) WHERE (from_prompt_at IS NOT NULL);
