-- Retriever versions ranked by how well their answers are supported (worst first).
-- attribution confidence: the verifier's confidence that a sentence is supported
-- (its confidence if fully grounded, else 1 - confidence).
SELECT s.retriever_version,
       count(DISTINCT s.response_id) AS responses,
       count(*) AS sentences,
       round(avg(CASE WHEN s.attribution_verdict = 'fully_grounded' THEN s.confidence ELSE 1 - s.confidence END), 3)
           AS mean_attribution_confidence,
       round(avg(s.confidence), 3) AS mean_verdict_confidence,
       round(avg(CASE WHEN s.attribution_verdict IN ('ungrounded', 'contradicted') THEN 1.0 ELSE 0.0 END), 3)
           AS unsupported_share
FROM sentences s
GROUP BY s.retriever_version
ORDER BY mean_attribution_confidence, s.retriever_version;
