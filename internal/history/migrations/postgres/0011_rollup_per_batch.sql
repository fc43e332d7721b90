-- The stats' rollup per batch (issue 21): SQLite's writer aggregates each batch in Go and 0011 drops SQLite's
-- per-row triggers. PostgreSQL keeps its triggers (0009/0010): it runs on its own host, so their CPU is not
-- the peers', and every release and tool writing a shared database keeps the rollup exact. This version
-- exists so that both dialects have the same versions.
SELECT 1;
