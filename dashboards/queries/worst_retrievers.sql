-- Retriever versions ranked by how well their answers are supported (worst first).
-- attribution confidence: the mean of the sentences' grounded_probability, the verifier's probability that a
-- sentence is fully grounded; mean_verdict_confidence is the mean of the spec's confidence in each verdict.
-- Read from the rollup `sentences_by_retriever` (per partition and retriever version: counts and sums of the
-- sentences, one per key), which gives the figures of the same query over `sentences` without a distinct count
-- over every sentence; a response's sentences lie in one partition, so its responses add up over partitions.
SELECT retriever_version,
       sum(responses)::BIGINT AS responses,
       sum(sentences)::BIGINT AS sentences,
       round(sum(grounded_probability_sum) / nullif(sum(confidence_count), 0), 3) AS mean_attribution_confidence,
       round(sum(confidence_sum) / nullif(sum(confidence_count), 0), 3) AS mean_verdict_confidence,
       round(sum(unsupported) / nullif(sum(sentences), 0), 3) AS unsupported_share
FROM sentences_by_retriever
GROUP BY retriever_version
ORDER BY mean_attribution_confidence, retriever_version;
