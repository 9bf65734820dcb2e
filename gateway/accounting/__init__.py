"""The bank's pure rules: service units, rate cards and costs, and what a run is charged.
No I/O: the services in `gateway.services` apply them to the ledger."""
