"""HTTP plumbing that knows no gridgate concept: client addresses, body caps and request
metrics, NUL refusal, Range requests, and the limits of long-lived streams."""
