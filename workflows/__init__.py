"""Workflows and the job relations Slurm users reach for. Pure: no I/O, never imports gateway.

Plain jobs:
- arrays: job arrays in Slurm's `--array` syntax (indices, steps, lists, '%' throttle)
- dependencies: afterok/afterany/afternotok, `--dependency` text, Slurm's readiness rule

Workflows (a DAG of steps, each a job; steps may run at different sites):
- model: the spec as written (steps, needs, matrix, inputs, retry, fail_fast); pydantic
- matrix: parameter sweeps and `${{ matrix.NAME }}` substitution, as data
- refs: data edges, `from: STEP[...]:outputs/PATH`
- paths: job-relative paths and output globs
- graph: cycles named as paths, topological order
- validate: how the steps fit together, every problem with where it is
- plan: the spec expanded into step instances with resolved inputs
- readiness: what to submit, skip or cancel now; when the workflow is finished
- retry: which failures are retried, after what delay
- schema: the JSON Schema of a workflow spec

Shared:
- errors: the one error tree (WorkflowError, a ValueError)
- limits: the sizes the gateway accepts, passed in as parameters
"""
