"""A three-site HPC testbed on one machine, as project code (root only).

Developer tooling, not in the gridgate wheel: the distribution gridgate-testbed in this
directory (testbed/pyproject.toml), installed from a clone with `pip install -e ./testbed`.

    python3 -m testbed.install              # Debian packages (once; skips if present)
    gridgate testbed up                     # ~4 s cold, ~0.2 s when already up
    gridgate testbed status [--json]
    gridgate testbed down                   # no process, namespace, mount or link left

Sites (from the templates site-configs/{roadrunner,galaxy,parnass2}.yaml):
`roadrunner` Slurm + slurmdbd (private MariaDB, no TCP), `galaxy` Grid Engine with
the parallel environment `mpi`, `parnass2` a second Slurm + slurmdbd. Each is a network
namespace on the bridge `<prefix>-br` with its own hostname, address (subnet .10,
.11, .12), sshd with its own ed25519 host key, and the accounts gwcomm (2001),
gwalice (2002) and gwbob (2003), each with a key pair made by the testbed. MPICH and
Open MPI are installed; `srun --mpi=pmi2`, `srun --mpi=pmix`, `mpirun.mpich` and
`mpirun.openmpi` run inside jobs.

Shape (see `holder`): per site a holder process, PID 1 of the site's PID namespace,
started as `nsenter --net=/run/netns/NS unshare --mount --uts --ipc --pid --fork
--mount-proc ...`, which bind-mounts the site's private files over the standard paths;
daemons join it with `nsenter -t HOLDER -m -u -i -n -p`. Tear-down SIGKILLs the holder
(after checking its command line) and deletes the namespace and links.

Prefix and subnet: `--prefix`/`--subnet` or GRIDGATE_TESTBED_PREFIX/_SUBNET (default
gwtb, 10.123.0.0/24). State dir: /run/gridgate-testbed/<prefix> (layout in `files`);
read it with `state.load`. Tests use `tests/testbed/fixture.py`.
"""
