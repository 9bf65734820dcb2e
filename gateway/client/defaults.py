"""Constants the CLI needs before it loads the client proper (no httpx, no pydantic)."""

DEFAULT_GATEWAY_URL = "http://127.0.0.1:8642"
