"""Delivering what the events outbox owes, on the worker's outbox thread: webhooks, job
mail."""
