-- Completion updates of a deliveries row must stay HOT (no new index entries): the row's next
-- version has to fit on its own page. Enqueue fills a page with ~40 rows whose completions all
-- arrive within a second, before pruning can reclaim the old versions, so fillfactor 80 left
-- room for only ~8 of them: 45% of completion updates were HOT, each other one wrote a tuple on
-- another page and an entry in all three indexes. At 50, 97% are HOT (docs/performance.md).
-- Takes effect on pages filled from now on; no rewrite, only a brief SHARE UPDATE EXCLUSIVE lock.
ALTER TABLE deliveries SET (fillfactor = 50);
