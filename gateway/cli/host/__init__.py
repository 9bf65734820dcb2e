"""Commands that run on the gateway host and import the server inside their bodies:
serve, worker, db, admin, site validate|check, and the developers' testbed."""
