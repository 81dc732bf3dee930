-- canopy_message_text(message jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The searchable text of a message: its text blocks in order, blank-line separated, cut at 100,000 characters
-- (a tsvector holds at most 1 MB; 100,000 characters of the worst text stay well under it, so no commit can fail
-- for being too long to index).
CREATE OR REPLACE FUNCTION public.canopy_message_text(message jsonb)
 RETURNS text
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT left(COALESCE(string_agg(block.value ->> 'text', E'\n\n' ORDER BY block.ordinality), ''), 100000)
      FROM jsonb_array_elements(CASE WHEN jsonb_typeof(message -> 'content') = 'array'
                                     THEN message -> 'content' ELSE '[]'::jsonb END) WITH ORDINALITY AS block
     WHERE block.value ->> 'type' = 'text' AND jsonb_typeof(block.value -> 'text') = 'string'
$function$;
