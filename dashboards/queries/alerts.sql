-- Drift and threshold alerts, firing first, then the most recent; one row per alert episode.
SELECT status, severity, "check", slice_dimension, slice_value, started_at, cleared_at,
       round(reference_value, 3) AS reference, round(current_value, 3) AS current, p_value, test,
       example_response_ids[1:3] AS examples
FROM alerts
ORDER BY status = 'firing' DESC, started_at DESC, "check";
