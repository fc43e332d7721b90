-- PostgreSQL's 0020 keeps its peer-level rollup cells a statement at a time instead of by row triggers. SQLite's
-- writer counts its rollup itself, a minute at a time (0017), with no triggers: this version exists so that
-- both dialects have the same versions.
SELECT 1;
