"""gridgate: a federated job gateway and metascheduler for HPC."""

__version__ = "0.1.0"
