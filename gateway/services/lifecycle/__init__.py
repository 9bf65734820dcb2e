"""The attempt lifecycle: leases and every state change a worker makes, one module per
step of the worker (gateway/worker/) that makes it.

A job placed at a site is claimed (`claims`: a SUBMITTING attempt under the worker's
lease, `holder`), staged in and submitted by the worker, and its submit recorded
(`submit_records`: the site's job id, the job QUEUED; or the refusal); a whole job
array the site takes natively is claimed and recovered as one (`native_arrays`). From
then on the status step records what the scheduler says (`statuses`), the cancel step
sends and records cancels (`cancels`, which also ends a claim overtaken while staging
in), and a run that ended with outputs is collected under a new lease (`stage_out`).
When a job has several attempts (a hedge, a failover sibling), the first to start is its
run (`hedging`). Every job state change goes through `transitions`, which the API's
services use too.

Each function works inside the caller's unit of work (one per worker step) and flushes
at most; the step commits. Rows are always locked attempts before jobs, in id order,
so concurrent workers never deadlock.

Crash safety rests on two rules kept here: an attempt stays SUBMITTING, under a lease,
until the site's job id is committed (a worker that dies in between is replaced after
the lease, and the replacement adopts the job by its tag before it would submit
again); and only the worker holding a lease records the outcome of the work it covers
(submission, stage-in, stage-out), so a late worker's result is discarded.
"""
