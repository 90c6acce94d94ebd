-- Tenants whose attribution coverage (claims with a source, spec 004) is under 95%, pooled over their claims,
-- with their low-confidence claim rate (alert above 10%) and the number of windows below 95%.
WITH pooled AS (
    SELECT tenant,
           sum(claim_count) AS claims,
           sum(attribution_coverage_rate * claim_count) / nullif(sum(claim_count), 0) AS coverage,
           sum(low_confidence_claim_rate * claim_count) / nullif(sum(claim_count), 0) AS low_confidence
    FROM responses
    WHERE claim_count > 0
    GROUP BY tenant
), windows AS (
    SELECT slice_value AS tenant, count(*) FILTER (WHERE attribution_coverage_rate < 0.95) AS windows_below
    FROM window_metrics
    WHERE slice_dimension = 'tenant'
    GROUP BY slice_value
)
SELECT p.tenant, p.claims, round(p.coverage, 3) AS coverage_rate, round(p.low_confidence, 3) AS low_confidence_rate,
       coalesce(w.windows_below, 0) AS windows_below_95
FROM pooled p LEFT JOIN windows w USING (tenant)
WHERE p.coverage < 0.95
ORDER BY p.coverage, p.tenant;
