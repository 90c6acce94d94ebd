-- Sentences of responses routed to human review that need a look: ungrounded, contradicted or under 0.7
-- confidence; high risk first, then the least supported.
-- The first 500 of them, and in `awaiting` how many there are in all: a reviewer works from the top, and at
-- 100 million sentences the queue holds hundreds of thousands that nobody reads (printing them took longer than
-- finding them). For the whole queue, drop the LIMIT; for the next page, add OFFSET 500.
SELECT r.risk_level, s.response_id, s.sentence_index, s.attribution_verdict, round(s.confidence, 2) AS confidence,
       r.tenant, s.retriever_version, left(s.sentence_text, 120) AS sentence,
       count(*) OVER () AS awaiting
FROM sentences s JOIN responses r USING (response_id)
WHERE r.needs_review
  AND (s.attribution_verdict IN ('ungrounded', 'contradicted') OR s.confidence < 0.7)
ORDER BY CASE r.risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END,
         CASE WHEN s.attribution_verdict = 'fully_grounded' THEN s.confidence ELSE 1 - s.confidence END,
         s.response_id, s.sentence_index
LIMIT 500;
