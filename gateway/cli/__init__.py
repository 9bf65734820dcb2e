"""The `gridgate` command line (Typer + rich): a client of the REST API, plus serve/worker/admin."""
