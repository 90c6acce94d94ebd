-- Dead letters by stage and reason (the reason code is the error text before the first colon).
SELECT stage,
       split_part(error, ':', 1) AS reason,
       count(*) AS messages,
       min(origin_source || coalesce(' #' || origin_offset, '')) AS first_seen
FROM dead_letters
GROUP BY 1, 2
ORDER BY messages DESC, reason;
