"""Batch schedulers reached through a transport: the adapter and what its dialects share.

`adapter.BatchAdapter` does the I/O for any scheduler; a dialect (adapters/slurm, sge,
pbs, lsf) is pure functions built from `dialect.BaseDialect`, `script` (batch scripts),
`directives` (the user's own `#SBATCH`-style lines), `arrays` (native arrays), `text`
(reading command output), `bulk_submit` (many submissions in one command) and `types`
(the plain data they share). `entry` is what a scheduler package tells the registry.
"""
