"""Webhooks (issue 29 item 4): subscriptions, the worker's deliveries, their targets."""
