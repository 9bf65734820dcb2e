"""Events: what one reader's stream shows, the cursor that reads the event log without
losing a late commit, and each event's CloudEvent (the stream and webhooks send the
same documents)."""
