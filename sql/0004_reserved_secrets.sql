-- Placeholder so the numbering stays gapless on the retention branch, where the secrets (0004) migration
-- written on another branch does not exist yet. DELETE THIS FILE when merging: the real file
-- takes its number. It changes nothing.
SELECT 1;
