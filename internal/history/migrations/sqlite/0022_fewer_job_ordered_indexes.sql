-- PostgreSQL's 0022 drops two of its executions' job-ordered indexes and keys its fire index by time first, as
-- SQLite's 0011, 0012, 0015 and 0019 did. SQLite's are already so: this version exists so that both dialects
-- have the same versions.
SELECT 1;
