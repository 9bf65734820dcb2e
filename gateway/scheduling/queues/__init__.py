"""A site's queue as its scheduler will run it (pure): `easy` (FCFS + EASY backfilling:
whole-log replay and projections of a snapshot), `queue_profile` (free processors over
time, where a new job fits) and `account_queue` (one account's own jobs, held by a cap
on what it runs at once)."""
