"""The worker: a loop (`loop`) that schedules steps, one module per step (route, claim,
stage-in, submit, poll, cancel, stage-out, settle, failover, ...), each over the services."""
