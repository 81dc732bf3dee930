-- canopy_search_vector(message jsonb)
--
-- Defined last by prisma/migrations/20261206000000_baseline/migration.sql.
-- The source of this function: edit it, then `npm run functions -- --migration <name>` makes the migration.
-- Rewritten from the migrated database by `npm run functions`; checked by libs/store/src/functions.int-spec.ts.
--
-- The words of a message, as every tsvector and query reads them: configuration `simple` (lower-cased words, no
-- stemming and no stop words), the same for every language a tenant's users write in. The text blocks' strings go
-- to to_tsvector as a jsonb array (C code throughout: a copied path of thousands of nodes is indexed in
-- milliseconds); a message too large for that to stay under a tsvector's 1 MB takes the cut text instead.
CREATE OR REPLACE FUNCTION public.canopy_search_vector(message jsonb)
 RETURNS tsvector
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
    SELECT CASE WHEN pg_column_size(message) <= 65536
                THEN to_tsvector('simple'::regconfig,
                                 jsonb_path_query_array(message, '$.content[*] ? (@.type == "text").text'))
                ELSE to_tsvector('simple'::regconfig, canopy_message_text(message)) END
$function$;
