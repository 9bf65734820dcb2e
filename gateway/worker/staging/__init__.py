"""Moving data to and from sites: stage-in of a claimed job's files and container image,
its launch line, stage-out of a finished run's outputs, per-content locks, and pruning
the sites' staging caches."""
