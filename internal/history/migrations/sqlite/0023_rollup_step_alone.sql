-- PostgreSQL's 0023 advances its rollup's frontier a step at a time, each step one statement under the
-- rollup's lock. SQLite's writer is alone: its advance runs in the writer's transaction, as before. This
-- version exists so that both dialects have the same versions.
SELECT 1;
