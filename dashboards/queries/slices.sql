-- Per tenant and retriever version: volume, mean sentence confidence, faithfulness and how many need review.
SELECT tenant,
       retriever_version AS retriever,
       count(*) AS responses,
       round(avg(mean_confidence), 3) AS mean_confidence,
       round(avg(overall_faithfulness_score), 3) AS faithfulness,
       count(*) FILTER (WHERE needs_review) AS needs_review
FROM responses
GROUP BY 1, 2
ORDER BY 1, 2;
