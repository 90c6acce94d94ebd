-- The unsupported spans that come back most often, with how many responses and tenants they appear in.
-- Read from the rollup `unsupported_spans_by_tenant` (per partition, span and tenant: occurrences, responses
-- and the first response id), which gives the figures of the same query over the unnested spans of `sentences`
-- without unnesting every sentence; a response lies in one partition and has one tenant, so its responses add up.
SELECT span,
       sum(occurrences)::BIGINT AS occurrences,
       sum(responses)::BIGINT AS responses,
       count(DISTINCT tenant) AS tenants,
       min(example_response_id) AS example_response_id
FROM unsupported_spans_by_tenant
GROUP BY span
ORDER BY occurrences DESC, span
LIMIT 25;
