-- Sentences of responses routed to human review that need a look: ungrounded, contradicted or under 0.7
-- confidence; high risk first, then the least supported (lowest grounded probability).
-- The first 500 of them, and in `awaiting` how many there are in all: a reviewer works from the top, and at
-- 100 million sentences the queue holds hundreds of thousands that nobody reads.
-- It reads `sentences_awaiting_review_top`, each hour's first 500 of the queue and its length (kept by
-- `groundwatch compact` for clean hours, computed for the others): the first 500 of the whole queue are among
-- them. For the whole queue or a page past the first 500, join the tables instead:
--   FROM sentences s JOIN responses r USING (response_id) WHERE r.needs_review AND (...), the same ORDER BY.
WITH top AS MATERIALIZED (SELECT * FROM sentences_awaiting_review_top)  -- computed once, read twice
SELECT risk_level, response_id, sentence_index, attribution_verdict, round(confidence, 2) AS confidence,
       round(grounded_probability, 2) AS grounded_probability, tenant, retriever_version, sentence,
       (SELECT CAST(sum(n) AS BIGINT) FROM (SELECT any_value(awaiting_in_hour) AS n FROM top GROUP BY date, hour))
           AS awaiting
FROM top
ORDER BY CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END,
         top.grounded_probability,  -- unrounded: the bare name is the rounded column above
         response_id, sentence_index
LIMIT 500;
