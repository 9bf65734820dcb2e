"""Job mail (a job spec's `notify`): the checks at submission (requests), the message
(message), the SMTP relay (relay) and the worker's pass over the events outbox (outbox)."""
