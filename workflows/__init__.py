"""Workflows and the job relations Slurm users reach for. Pure: no I/O, never imports gateway.

- arrays: job arrays in Slurm's `--array` syntax (indices, steps, lists, '%' throttle)
- dependencies: afterok/afterany/afternotok, `--dependency` text, Slurm's readiness rule
- errors: the one error tree (WorkflowError, a ValueError)
- limits: the sizes the gateway accepts, passed in as parameters
"""
