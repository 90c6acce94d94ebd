-- Responses routed to human review, in the review app's queue order (high risk first, then oldest first),
-- with why: the routes the audit stored and the first reason.
SELECT response_id, event_time, tenant, risk_level, review_routes AS routes,
       round(overall_faithfulness_score, 2) AS faithfulness, len(review_reasons) AS reasons,
       review_reasons[1] AS first_reason
FROM responses
WHERE needs_review
ORDER BY CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, event_time, response_id;
