"""Node-local scratch (`resources.scratch_mb`, TES `disk_gb`) in each scheduler's request,
in the syntax its documentation gives: Slurm's `--tmp` per node (sbatch(1)); LSF's
built-in `tmp` load index in `rusage[]`, per slot like memory, in MB (lsf "Resource
requirement strings"); Grid Engine and PBS Professional have no built-in scratch
resource, so a site names its consumable (complex(5); a host-level custom resource in a
`select` chunk, PBS Professional Administrator's Guide); TORQUE's `file` limits the size of
one file (pbs_resources(7B)), not the disk a job may use, so TORQUE sends none.
PBS and LSF cannot be installed here: these are the documented forms, not a run."""

from __future__ import annotations

from adapters.base import Resources, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout
from adapters.lsf.dialect import LsfDialect
from adapters.pbs.dialect import PbsDialect
from adapters.sge.dialect import SgeDialect
from adapters.slurm.dialect import SlurmDialect

WORKDIR = "/scratch/gw/gw-0b7e4c1a-1111-4c1a-9a3e-000000000009"
# Two nodes, two ranks of two threads each per node: four slots per node.
RESOURCES = Resources(nodes=2, ranks=4, ranks_per_node=2, threads_per_rank=2,
                      memory_mb=4000, scratch_mb=10_000)
REQUEST = SubmitRequest(tag="gw-0b7e4c1a-1111-4c1a-9a3e-000000000009", workdir=WORKDIR,
                        argv=["./a.out"], resources=RESOURCES)
LAYOUT = JobLayout.of(WORKDIR)


def argv(dialect: SlurmDialect | SgeDialect | PbsDialect | LsfDialect,
         request: SubmitRequest = REQUEST) -> list[str]:
    return list(dialect.submit_command(request, LAYOUT).argv)


def test_slurm_asks_tmp_per_node() -> None:
    words = argv(SlurmDialect(DialectConfig()))
    assert "--tmp=10000M" in words and "--mem=4000M" in words


def test_lsf_asks_tmp_per_slot_in_the_memory_rusage() -> None:
    words = argv(LsfDialect(DialectConfig()))
    assert words[words.index("rusage[mem=1000:tmp=2500]") - 1] == "-R"
    assert "rusage[tmp=2500]" in argv(LsfDialect(DialectConfig(), memory=False))


def test_grid_engine_asks_the_sites_consumable_per_slot() -> None:
    named = argv(SgeDialect(DialectConfig(), parallel_environment="mpi",
                            memory_resource="h_vmem", scratch_resource="tmpfree"))
    assert named[-4:] == ["-l", "h_vmem=1000M", "-l", "tmpfree=2500M"]
    unnamed = argv(SgeDialect(DialectConfig(), parallel_environment="mpi"))
    assert not any("2500M" in word for word in unnamed)


def test_pbs_professional_asks_the_sites_resource_in_each_chunk() -> None:
    named = argv(PbsDialect(DialectConfig(), scratch_resource="scratch_local"))
    assert "select=2:ncpus=4:mpiprocs=2:ompthreads=2:mem=4000mb:scratch_local=10000mb" in named
    assert "select=2:ncpus=4:mpiprocs=2:ompthreads=2:mem=4000mb" in argv(
        PbsDialect(DialectConfig()))


def test_torque_sends_no_scratch_request() -> None:
    words = argv(PbsDialect(DialectConfig(), torque=True, keep_files=None,
                            scratch_resource="scratch_local"))
    assert not any("10000" in word or "file=" in word for word in words)


def test_no_scratch_asked_none_sent() -> None:
    plain = SubmitRequest(tag=REQUEST.tag, workdir=WORKDIR, argv=["./a.out"])
    assert not any(word.startswith("--tmp") for word in argv(SlurmDialect(DialectConfig()),
                                                              plain))
    assert not any("tmp=" in word for word in argv(LsfDialect(DialectConfig()), plain))
