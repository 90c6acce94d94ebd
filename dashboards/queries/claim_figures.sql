-- Generator claims per tenant: attribution coverage and low-confidence rate (spec 004 alerts at < 95% and > 10%
-- per response), overconfident claims, and responses past either alert line.
WITH per_claim AS (
    SELECT tenant,
           count(*) AS claims,
           round(avg(CASE WHEN missing_source THEN 0.0 ELSE 1.0 END), 3) AS coverage,
           round(avg(CASE WHEN low_confidence THEN 1.0 ELSE 0.0 END), 3) AS low_confidence,
           count(*) FILTER (WHERE overconfident) AS overconfident,
           count(*) FILTER (WHERE missing_low_confidence_reason) AS low_without_reason
    FROM claims
    GROUP BY tenant
), per_response AS (
    SELECT tenant,
           count(*) AS responses_with_claims,
           count(*) FILTER (WHERE attribution_coverage_rate < 0.95) AS coverage_under_95,
           count(*) FILTER (WHERE low_confidence_claim_rate > 0.10) AS low_confidence_over_10
    FROM responses
    WHERE claim_count > 0
    GROUP BY tenant
)
SELECT per_claim.*, responses_with_claims, coverage_under_95, low_confidence_over_10
FROM per_claim LEFT JOIN per_response USING (tenant)
ORDER BY tenant;
