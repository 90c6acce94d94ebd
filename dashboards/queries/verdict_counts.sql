-- Sentence verdicts across the lake, with their mean confidence.
SELECT attribution_verdict AS verdict,
       count(*) AS sentences,
       round(avg(confidence), 3) AS mean_confidence
FROM sentences
GROUP BY 1
ORDER BY sentences DESC;
