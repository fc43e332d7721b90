-- PostgreSQL's 0021 counts its stats' rollup a minute at a time behind a frontier, as SQLite's 0017 does.
-- This version exists so that both dialects have the same versions.
SELECT 1;
