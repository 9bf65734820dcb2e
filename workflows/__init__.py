"""Workflows and the job relations Slurm users reach for. Pure: no I/O, never imports gateway.

- errors: the one error tree (WorkflowError, a ValueError)
- limits: the sizes the gateway accepts, passed in as parameters
"""
