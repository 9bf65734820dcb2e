"""One module per resource of the REST API; each route calls services, never SQL."""
