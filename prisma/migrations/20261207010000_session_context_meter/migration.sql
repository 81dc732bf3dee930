-- The session's token meter: what the next run from its head would send, counted after its last run ended
-- ({tokens, window, strategy, summarizedThrough}); NULL until a run was counted. Shown by GET /v1/sessions/:id.

ALTER TABLE public.sessions ADD COLUMN context_meter jsonb;
