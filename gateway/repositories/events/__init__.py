"""The event log's rows: reading it for the stream and webhooks, writing the events
that are not a job's state change (those are the job's history: jobs.events)."""
