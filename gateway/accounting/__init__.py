"""The bank's pure rules: service units, rate cards and costs, what a job asks to hold
(what its quote prices), and what a run is charged. No I/O: the services in
`gateway.services` apply them to the ledger."""
