"""Handing jobs to sites: claim ACCEPTED jobs (new attempts under this worker's lease),
turn each stored spec into the adapter's request (`requests`), submit (one by one, in
bursts, or as native arrays) and record the site's job ids in one unit of work."""
