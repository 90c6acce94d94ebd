-- Dead letters by stage and reason (the reason code: the error text before its first colon; lakes written
-- before the `reason` column get it from `error`).
SELECT stage,
       coalesce(reason, split_part(error, ':', 1)) AS reason,
       count(*) AS messages,
       min(origin_source || coalesce(' #' || origin_offset, '')) AS first_seen
FROM dead_letters
GROUP BY 1, 2
ORDER BY messages DESC, reason;
