"""The configs shipped in site-configs/ and the JSON Schema exported beside them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from gateway.siteconfig import (
    SiteConfigError,
    SiteState,
    load_site_config,
    load_site_configs,
    render_json_schema,
    site_config_json_schema,
)
from tests.siteconfig.conftest import GOOD

CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"
SCHEMA_FILE = CONFIGS / "schema.json"
TESTBED = ("galaxy", "parnass2", "roadrunner")
SEEDS = ("bonn-parnass2", "jpl-beowulf", "mhpcc-netfinity", "sbu-galaxy", "unm-roadrunner")
# The seed clusters that run PBS, as sites the gateway drives (examples/<seed>.yaml).
PBS_EXAMPLES = ("mhpcc-netfinity", "sbu-galaxy", "unm-roadrunner")
SHIPPED = sorted(CONFIGS.rglob("*.yaml"))


def test_json_schema_file_is_current() -> None:
    """site-configs/schema.json is the schema's export; a stale file is rewritten, and fails."""
    wanted = render_json_schema()
    current = SCHEMA_FILE.read_text(encoding="utf-8") if SCHEMA_FILE.exists() else None
    if current != wanted:
        SCHEMA_FILE.write_text(wanted, encoding="utf-8")
        pytest.fail(f"{SCHEMA_FILE} was stale and has been rewritten from "
                    "gateway.siteconfig.site_config_json_schema(): review and commit it")


def test_every_shipped_config_is_there() -> None:
    names = sorted(p.relative_to(CONFIGS).as_posix() for p in SHIPPED)
    assert names == sorted([*(f"{n}.yaml" for n in TESTBED), *(f"seeds/{n}.yaml" for n in SEEDS),
                            *(f"examples/{n}.yaml" for n in PBS_EXAMPLES)])


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.relative_to(CONFIGS).as_posix())
def test_shipped_config_validates(path: Path) -> None:
    config = load_site_config(path)
    assert config.name == path.stem
    # The exported JSON Schema (what editors use) accepts it too.
    jsonschema.validate(yaml.safe_load(path.read_text()), site_config_json_schema())


def test_json_schema_refuses_what_the_model_refuses() -> None:
    schema = site_config_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(GOOD, schema)
    for bad in ({**GOOD, "colour": "blue"}, {**GOOD, "name": "Bad Name"},
                {**GOOD, "scheduler": {"kind": "torque"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_testbed_sites_are_templates() -> None:
    configs = {c.name: c for c in load_site_configs(CONFIGS, include_templates=True)}
    assert sorted(configs) == list(TESTBED)
    for config in configs.values():
        assert config.provisioned_by == "testbed" and not config.is_complete
        assert config.state == SiteState.ENABLED and not config.descriptive
        assert config.ssh is not None and config.ssh.host.startswith("10.123.0.")
        assert config.scratch_root is not None
    assert configs["roadrunner"].scheduler.kind == "slurm"
    assert configs["parnass2"].scheduler.kind == "slurm"
    assert configs["galaxy"].scheduler.kind == "sge"
    assert configs["galaxy"].scheduler.parallel_environment == "mpi"
    # parnass2 is independent of roadrunner: other partitions and other limits.
    rr, p2 = configs["roadrunner"], configs["parnass2"]
    assert {p.name for p in rr.partitions}.isdisjoint({p.name for p in p2.partitions})
    assert rr.max_concurrent_jobs != p2.max_concurrent_jobs
    # Both account modes are exercised.
    modes = {c.name: c.accounts.mode.value for c in configs.values() if c.accounts}
    assert set(modes.values()) == {"community", "mapped"}
    # The gateway refuses the templates themselves.
    with pytest.raises(SiteConfigError):
        load_site_configs(CONFIGS)


def test_seed_sites_are_descriptive_and_drained() -> None:
    configs = {c.name: c for c in load_site_configs(CONFIGS / "seeds")}
    assert sorted(configs) == list(SEEDS)
    for config in configs.values():
        assert config.descriptive and config.state == SiteState.DRAINED
        assert config.ssh is None and config.accounts is None
        assert not config.is_complete


def test_pbs_examples_are_the_seeds_made_reachable() -> None:
    """Complete PBS sites (the gateway loads them as they are) with the seeds' figures."""
    seeds = {c.name: c for c in load_site_configs(CONFIGS / "seeds")}
    examples = {c.name: c for c in load_site_configs(CONFIGS / "examples")}
    assert sorted(examples) == list(PBS_EXAMPLES)
    for name, example in examples.items():
        assert example.scheduler.kind == "pbs" and example.is_complete
        assert example.state == SiteState.ENABLED and not example.descriptive
        assert example.ssh is not None and example.accounts is not None
        seed = seeds[name]
        for part in ("partitions", "interconnect", "other_interconnects", "mpi_flavors",
                     "location", "description"):
            assert getattr(example, part) == getattr(seed, part), (name, part)
    assert examples["unm-roadrunner"].scheduler.options == {
        "accounting_dir": "/var/spool/pbs/server_priv/accounting"}
    # NetFinity ran the Maui scheduler: its example is a TORQUE server.
    assert examples["mhpcc-netfinity"].scheduler.options == {
        "pbs_server": "torque", "accounting_dir": "/var/spool/torque/server_priv/accounting"}


def test_seed_figures_are_the_papers() -> None:
    """Spot checks against the seed papers' text (the comments cite each section)."""
    seeds = {c.name: c for c in load_site_configs(CONFIGS / "seeds")}
    rr = seeds["unm-roadrunner"]
    assert (rr.interconnect.name, rr.interconnect.latency_us,
            rr.interconnect.bandwidth_mbs) == ("Myrinet", 28.0, 69.1)
    eth = rr.other_interconnects[0]
    assert (eth.name, eth.latency_us, eth.bandwidth_mbs) == ("Fast Ethernet", 178, 8.09)
    assert (rr.partitions[0].nodes, rr.partitions[0].cores_per_node,
            rr.partitions[0].memory_mb_per_node) == (64, 2, 512)
    jpl = seeds["jpl-beowulf"]
    assert (jpl.interconnect.latency_us, jpl.interconnect.bandwidth_mbs) == (9.3, 225)
    assert (jpl.partitions[0].nodes, jpl.partitions[0].memory_mb_per_node) == (26, 2048)
    mhpcc = seeds["mhpcc-netfinity"]
    # Derived from Tessera's MPI_Recv model (Table 3): latency a0, bandwidth 1/b1.
    assert mhpcc.interconnect.latency_us == round(30.89969, 1)
    assert mhpcc.interconnect.bandwidth_mbs == round(1 / 0.00610, 1)
    assert mhpcc.other_interconnects[0].bandwidth_mbs == round(1 / 0.09761, 2)
    assert mhpcc.partitions[0].nodes * mhpcc.partitions[0].cores_per_node == 520
    galaxy = seeds["sbu-galaxy"]
    assert galaxy.interconnect.bandwidth_mbs == 0.82 * 100 / 8  # 82% of 100 Mbit/s
    assert seeds["bonn-parnass2"].interconnect.bandwidth_mbs == 850 / 8  # Table 1


_FIGURE = re.compile(r"^\s*-?\s*(nodes|max_nodes|cores_per_node|memory_mb_per_node|latency_us|"
                     r"bandwidth_mbs|max_walltime|kind):")
_CITATION = re.compile(r"§|Table|Abstract|ASSUMED|not given|no limit given")


@pytest.mark.parametrize("name", SEEDS)
def test_every_seed_figure_cites_the_paper(name: str) -> None:
    lines = (CONFIGS / "seeds" / f"{name}.yaml").read_text(encoding="utf-8").splitlines()
    uncited = [line for line in lines if _FIGURE.match(line)
               and not _CITATION.search(line.partition("#")[2])]
    assert uncited == []


def test_schema_file_is_json_with_a_dialect() -> None:
    data = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    assert data["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert data["additionalProperties"] is False
