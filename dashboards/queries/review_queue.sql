-- Responses routed to human review, high risk first, with the first reason.
SELECT response_id, tenant, risk_level, round(overall_faithfulness_score, 2) AS faithfulness,
       len(review_reasons) AS reasons, review_reasons[1] AS first_reason
FROM responses
WHERE needs_review
ORDER BY CASE risk_level WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, faithfulness, response_id;
