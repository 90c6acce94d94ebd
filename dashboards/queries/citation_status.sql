-- Citation audit per tenant: how many citations passed, how many failed and why, and how quotes matched.
SELECT tenant,
       count(*) AS citations,
       count(*) FILTER (WHERE overall_verdict = 'PASS') AS passed,
       count(*) FILTER (WHERE overall_verdict = 'FAIL') AS failed,
       count(*) FILTER (WHERE verification_status = 'fabricated') AS fabricated,
       count(*) FILTER (WHERE verification_status = 'misattributed') AS misattributed,
       count(*) FILTER (WHERE verification_status = 'partial_match') AS partial_match,
       count(*) FILTER (WHERE verification_status = 'unverifiable') AS unverifiable,
       count(*) FILTER (WHERE len(contextual_fidelity_issues) > 0) AS distorted,
       count(*) FILTER (WHERE quote IS NOT NULL) AS quotes,
       count(*) FILTER (WHERE quote_match = 'exact') AS exact_quotes
FROM citations
GROUP BY tenant
ORDER BY tenant;
