-- The unsupported spans that come back most often, with how many responses and tenants they appear in.
SELECT span,
       count(*) AS occurrences,
       count(DISTINCT response_id) AS responses,
       count(DISTINCT tenant) AS tenants,
       min(response_id) AS example_response_id
FROM (SELECT unnest(unsupported_spans) AS span, response_id, tenant FROM sentences)
WHERE length(trim(span)) > 0
GROUP BY span
ORDER BY occurrences DESC, span
LIMIT 25;
