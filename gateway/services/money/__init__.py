"""Money: what a job may cost, what is held for it and what it is charged.

The flow, top to bottom: `budget` (may this job start, given its project's balance?) ->
`quotes` (a site's price for a job) -> `bank` (liens held at placement, released or
settled at the end; its docstrings state the invariants) -> `settlement` (the charge of
an ended run, from the site's own usage records) -> `ledger` (append-only entries and the
audit log). `allocations`, `allocation_admin` and `balances` are a project's awards and
what is left of them; `reports` and `audit` are what allocation committees read.
The pure rules (units, rate cards, rounding) live in `gateway.accounting`.
"""
