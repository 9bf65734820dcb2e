"""The site config schema: bad configs are refused with the field to fix and what to do."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gateway.domain.errors import Invalid
from gateway.siteconfig import (
    AccountMode,
    KeyRef,
    SiteConfig,
    SiteConfigError,
    dump_site_config,
    parse_site_config,
    resolve_key_path,
    validate_site_config,
    with_updates,
)
from tests.siteconfig.conftest import (
    GOOD,
    HOST_KEY,
    JUMP_KEY,
    ec_private_pem,
    ecdsa_public_line,
    ed25519_private_openssh,
)

Data = dict[str, Any]


def _set(path: str, value: Any) -> Callable[[Data], None]:
    """A mutation that sets the dotted `path` (list indices as numbers) to `value`."""

    def mutate(data: Data) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return mutate


def _del(path: str) -> Callable[[Data], None]:
    def mutate(data: Data) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return mutate


def _all(*mutations: Callable[[Data], None]) -> Callable[[Data], None]:
    def mutate(data: Data) -> None:
        for m in mutations:
            m(data)

    return mutate


def _sge(data: Data) -> None:
    data["scheduler"] = {"kind": "sge", "parallel_environment": "mpi"}
    data["mpi_flavors"] = [{"name": "mpich", "launchers": ["mpirun"]}]


PRIVATE_OPENSSH = ed25519_private_openssh()
PRIVATE_PEM = ec_private_pem()
_KEY_TYPE, _KEY_B64, *_ = HOST_KEY.split()

# (id, mutation, field the error must name, words the message must contain)
BAD: list[tuple[str, Callable[[Data], None], str, str]] = [
    ("unknown-top-field", _set("nmae", "x"), "nmae", "allowed here: name, description"),
    ("unknown-nested-field", _set("ssh.hostkeys", []), "ssh.hostkeys", "remove it or fix"),
    ("missing-name", _del("name"), "name", "required: add it"),
    ("bad-name", _set("name", "Alpha_1"), "name", "lowercase letters"),
    ("name-not-text", _set("name", ["a"]), "name", "expected text"),
    ("unknown-scheduler", _set("scheduler.kind", "torque"), "scheduler.kind", "'slurm'"),
    ("version-as-number", _set("scheduler.version", 22.05), "scheduler.version", "quote it"),
    ("binary-of-other-scheduler", _set("scheduler.binaries", {"qsub": "/usr/bin/qsub"}),
     "scheduler.binaries.qsub", "not a slurm command: use one of sacct"),
    ("binary-relative-path", _set("scheduler.binaries", {"sbatch": "bin/sbatch"}),
     "scheduler.binaries.sbatch", "not an absolute path"),
    ("pe-on-slurm", _set("scheduler.parallel_environment", "mpi"),
     "scheduler.parallel_environment", "only Grid Engine has parallel environments"),
    ("sge-mpi-without-pe", _all(_sge, _del("scheduler.parallel_environment")),
     "scheduler.parallel_environment", "qconf -spl"),
    ("pbs-option-on-slurm", _set("scheduler.accounting_dir", "/var/spool/pbs"),
     "scheduler.accounting_dir",
     "only PBS or LSF have accounting log directories: remove it for a slurm site"),
    ("lsf-option-on-pbs", _all(_set("scheduler", {"kind": "pbs", "memory_requests": False}),
                               _set("mpi_flavors", [])),
     "scheduler.memory_requests", "only LSF has rusage memory requests"),
    ("keep-files-bad", _all(_set("scheduler", {"kind": "pbs", "keep_files": "oex"}),
                            _set("mpi_flavors", [])),
     "scheduler.keep_files", "not a valid qsub -k value"),
    ("pbs-server-unknown", _all(_set("scheduler", {"kind": "pbs", "pbs_server": "pbspro"}),
                                _set("mpi_flavors", [])),
     "scheduler.pbs_server", "use pro (PBS Professional / OpenPBS) or torque"),
    ("flag-as-text", _all(_set("scheduler", {"kind": "lsf", "memory_requests": "maybe"}),
                          _set("mpi_flavors", [])),
     "scheduler.memory_requests", "expected true or false"),
    ("srun-on-pbs", _all(_set("scheduler", {"kind": "pbs"}), _set("mpi_flavors", [
        {"name": "mpich", "launchers": ["srun"]}])),
     "mpi_flavors[mpich].launchers", "srun needs a Slurm site"),
    ("srun-on-sge", _all(_sge, _set("mpi_flavors", [{"name": "mpich",
                                                     "launchers": ["mpirun", "srun"]}])),
     "mpi_flavors[mpich].launchers", "srun needs a Slurm site"),
    ("qos-on-sge", _all(_sge, _set("scheduler.qos", ["long"])), "scheduler.qos",
     "only Slurm jobs name a QOS: remove it for a sge site"),
    ("qos-name-bad", _set("scheduler.qos", ["long\n"]), "scheduler.qos[0]",
     "not a valid QOS name"),
    ("scratch-zero", _set("partitions.0.scratch_mb_per_node", 0),
     "partitions[debug].scratch_mb_per_node", "greater than or equal to 1"),
    ("timezone-unknown", _set("scheduler.timezone", "Mars/Olympus"), "scheduler.timezone",
     "not a known time zone"),
    ("account-bad", _set("scheduler.account", "proj 1"), "scheduler.account",
     "not a valid scheduler account"),
    ("submit-arg-empty", _set("scheduler.submit_args", [""]), "scheduler.submit_args[0]",
     "cannot be empty"),
    ("job-setup-multiline", _set("job_setup", ["a\nb"]), "job_setup[0]", "one line"),
    ("no-ssh", _del("ssh"), "ssh", "required for a slurm site"),
    ("no-host-keys", _set("ssh.host_keys", []), "ssh.host_keys",
     "required and non-empty: pin the login node's public host key"),
    ("known-hosts-line", _set("ssh.host_keys", [f"login.alpha {_KEY_TYPE} {_KEY_B64}"]),
     "ssh.host_keys[0]", "known_hosts line: drop the leading host field"),
    ("host-key-not-base64", _set("ssh.host_keys", ["ssh-ed25519 not*base64"]),
     "ssh.host_keys[0]", "not valid base64"),
    ("host-key-wrong-type", _set("ssh.host_keys", [f"ssh-rsa {_KEY_B64}"]),
     "ssh.host_keys[0]", "does not belong to a ssh-rsa key"),
    ("host-key-dsa", _set("ssh.host_keys", ["ssh-dss AAAAB3NzaC1kc3M="]), "ssh.host_keys[0]",
     "DSA host keys are refused"),
    ("host-key-one-word", _set("ssh.host_keys", ["AAAAC3NzaC1lZDI1NTE5"]),
     "ssh.host_keys[0]", "one OpenSSH public key line"),
    ("host-key-twice", _set("ssh.host_keys", [HOST_KEY, f"{_KEY_TYPE} {_KEY_B64} other"]),
     "ssh.host_keys", "listed twice"),
    ("private-key-as-host-key", _set("ssh.host_keys", [PRIVATE_OPENSSH]), "ssh.host_keys[0]",
     "looks like a private key; never put a private key in a site config"),
    ("private-key-inline", _set("accounts.community.key", PRIVATE_OPENSSH),
     "accounts.community.key", "looks like a private key"),
    ("private-key-in-path", _set("accounts.community.key", {"path": PRIVATE_PEM}),
     "accounts.community.key.path", "chmod 600"),
    ("private-key-in-description", _set("description", "see\n" + PRIVATE_PEM),
     "description", "looks like a private key"),
    ("private-key-bare-body", _set("mpi_flavors.0.setup",
                                   [PRIVATE_OPENSSH.splitlines()[1]]),
     "mpi_flavors[openmpi].setup[0]", "looks like a private key"),
    ("key-both-path-and-secret",
     _set("accounts.community.key", {"path": "/k", "secret": "k"}),
     "accounts.community.key", "exactly one of `path`"),
    ("key-neither", _set("accounts.community.key", {}), "accounts.community.key",
     "exactly one of `path`"),
    ("key-as-plain-string", _set("accounts.community.key", "/home/gw/.ssh/id_ed25519"),
     "accounts.community.key", "a key reference is a mapping"),
    ("account-user-bad", _set("accounts.community.user", "gw comm"),
     "accounts.community.user", "not a valid Unix account name"),
    ("secret-with-slash", _set("accounts.community.key", {"secret": "../id"}),
     "accounts.community.key.secret", "not a plain file name"),
    ("host-with-port", _set("ssh.host", "login.alpha:2222"), "ssh.host", "put the port"),
    ("host-bad", _set("ssh.host", "-bad-.example"), "ssh.host", "not a host name"),
    ("port-too-high", _set("ssh.port", 70000), "ssh.port", "less than or equal to 65535"),
    ("timeout-zero", _set("ssh.command_timeout_seconds", 0), "ssh.command_timeout_seconds",
     "greater than 0"),
    ("jump-host-without-keys",
     _set("ssh.jump_host", {"host": "bastion", "user": "gw", "key": {"secret": "j"}}),
     "ssh.jump_host.host_keys", "pin the jump host"),
    ("no-accounts", _del("accounts"), "accounts", "mode: community"),
    ("community-without-account", _set("accounts", {"mode": "community"}),
     "accounts.community", "required in community mode"),
    ("community-with-mapped", _set("accounts.mapped",
                                   {"alice": {"user": "a", "key": {"secret": "a"}}}),
     "accounts.mapped", "only used in mapped mode"),
    ("mapped-empty", _set("accounts", {"mode": "mapped"}), "accounts.mapped",
     "at least one entry"),
    ("mapped-shared-account", _set("accounts", {"mode": "mapped", "mapped": {
        "alice": {"user": "gw", "key": {"secret": "a"}},
        "bob": {"user": "gw", "key": {"secret": "b"}}}}),
     "accounts.mapped.bob.user", "already mapped to 'alice'"),
    ("mapped-user-with-space", _set("accounts", {"mode": "mapped", "mapped": {
        "al ice": {"user": "gw", "key": {"secret": "a"}}}}),
     "accounts.mapped.al ice", "not a valid gateway user name"),
    ("unknown-mode", _set("accounts.mode", "shared"), "accounts.mode", "'community'"),
    ("no-partitions", _set("partitions", []), "partitions", "must not be empty"),
    ("partitions-not-list", _set("partitions", {"name": "x"}), "partitions",
     "expected a list"),
    ("no-default-partition", _set("partitions.0.default", False), "partitions",
     "set `default: true` on exactly one"),
    ("two-default-partitions", _set("partitions.1.default", True), "partitions",
     "2 default partitions"),
    ("partition-twice", _set("partitions.1.name", "debug"), "partitions", "listed twice"),
    ("max-nodes-over-nodes", _set("partitions.1.max_nodes", 64),
     "partitions[long].max_nodes", "lower it or raise `nodes`"),
    ("walltime-garbage", _set("partitions.0.max_walltime", "soon"),
     "partitions[debug].max_walltime", "not seconds or [D-][HH:]MM:SS"),
    ("walltime-bad-minutes", _set("partitions.0.max_walltime", "10:75"),
     "partitions[debug].max_walltime", "below 60"),
    ("memory-zero", _set("partitions.0.memory_mb_per_node", 0),
     "partitions[debug].memory_mb_per_node", "greater than or equal to 1"),
    ("cores-missing", _del("partitions.1.cores_per_node"), "partitions[long].cores_per_node",
     "required: add it (Cores"),
    ("partition-name-bad", _set("partitions.1.name", "long queue"),
     "partitions[long queue].name", "not a valid partition or queue name"),
    ("latency-zero", _set("interconnect.latency_us", 0), "interconnect.latency_us",
     "greater than 0"),
    ("bandwidth-missing", _del("interconnect.bandwidth_mbs"), "interconnect.bandwidth_mbs",
     "required"),
    ("network-twice", _set("other_interconnects", [
        {"name": "InfiniBand", "latency_us": 1, "bandwidth_mbs": 1}]),
     "other_interconnects[InfiniBand].name", "listed twice"),
    ("launcher-unknown", _set("mpi_flavors.0.launchers", ["aprun"]),
     "mpi_flavors[openmpi].launchers[0]", "'mpirun', 'srun' or 'mpiexec'"),
    ("no-launchers", _set("mpi_flavors.0.launchers", []), "mpi_flavors[openmpi].launchers",
     "must not be empty"),
    ("launcher-twice", _set("mpi_flavors.0.launchers", ["mpirun", "mpirun"]),
     "mpi_flavors[openmpi].launchers", "mpirun is listed twice"),
    ("flavor-twice", _set("mpi_flavors.1", {"name": "openmpi", "launchers": ["srun"]}),
     "mpi_flavors[openmpi].name", "one entry per flavor, with all its launchers"),
    ("command-without-mpirun", _set("mpi_flavors.1.command", ["mpirun.mpich"]),
     "mpi_flavors[mpich].command", "only used with launcher mpirun or mpiexec"),
    ("srun-mpi-without-srun", _set("mpi_flavors.0.srun_mpi", "pmix"),
     "mpi_flavors[openmpi].srun_mpi", "only used with launcher srun"),
    ("srun-mpi-bad", _set("mpi_flavors.1.srun_mpi", "pmi2 --x"),
     "mpi_flavors[mpich].srun_mpi", "not an srun MPI plugin name"),
    ("ranks-per-node-without-n", _set("mpi_flavors.0.ranks_per_node_args", ["-ppn", "2"]),
     "mpi_flavors[openmpi].ranks_per_node_args", "write {n} where"),
    ("setup-multiline", _set("mpi_flavors.0.setup", ["module load a\nrm -rf /"]),
     "mpi_flavors[openmpi].setup[0]", "one line per list item"),
    ("flavor-name-bad", _set("mpi_flavors.0.name", "Open MPI"), "mpi_flavors[Open MPI].name",
     "not a valid MPI flavor name"),
    ("scratch-relative", _set("scratch_root", "scratch"), "scratch_root",
     "not an absolute path"),
    ("scratch-dotdot", _set("scratch_root", "/scratch/../etc"), "scratch_root", "'..'"),
    ("scratch-missing", _del("scratch_root"), "scratch_root", "required"),
    ("charge-zero", _set("charge_factor", 0), "charge_factor", "greater than 0"),
    ("max-jobs-zero", _set("max_concurrent_jobs", 0), "max_concurrent_jobs",
     "greater than or equal to 1"),
    ("state-unknown", _set("state", "paused"), "state", "'enabled' or 'drained'"),
    ("descriptive-enabled", _set("descriptive", True), "state", "set `state: drained`"),
    ("local-with-ssh", _set("scheduler", {"kind": "local"}), "ssh", "local site"),
    ("provisioner-unknown", _set("provisioned_by", "ansible"), "provisioned_by", "'testbed'"),
]


@pytest.mark.parametrize(("mutate", "field", "words"),
                         [pytest.param(m, f, w, id=i) for i, m, f, w in BAD])
def test_bad_config_is_refused_naming_the_field(
        mutate: Callable[[Data], None], field: str, words: str, good: Data) -> None:
    mutate(good)
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(good, "alpha.yaml")
    problems = {p.field: p.message for p in caught.value.problems}
    assert field in problems, f"expected a problem for {field}, got {problems}"
    assert words in problems[field]
    # The error is an Invalid whose `errors` become the API's 422 field list.
    assert isinstance(caught.value, Invalid)
    assert {"field": field, "message": problems[field]} in caught.value.extra["errors"]
    assert caught.value.detail.startswith("alpha.yaml: invalid site configuration: ")


def test_the_base_config_is_valid() -> None:
    config = validate_site_config(GOOD)
    assert config.is_complete and config.is_remote
    assert config.default_partition.name == "debug"
    assert config.partition(None) is config.default_partition
    assert config.partition("long") is config.partitions[1]
    assert config.partition("nope") is None


# (id, mutation) of configs that must be accepted.
GOOD_VARIANTS: list[tuple[str, Callable[[Data], None]]] = [
    ("walltime-seconds", _set("partitions.0.max_walltime", 600)),
    ("walltime-unlimited", _set("partitions.1.max_walltime", "UNLIMITED")),
    ("walltime-minutes-seconds", _set("partitions.0.max_walltime", "30:00")),
    ("ecdsa-host-key", _set("ssh.host_keys", [ecdsa_public_line()])),
    ("two-host-keys", _set("ssh.host_keys", [HOST_KEY, ecdsa_public_line()])),
    ("host-key-without-comment", _set("ssh.host_keys", [f"{_KEY_TYPE} {_KEY_B64}"])),
    ("ipv4-host", _set("ssh.host", "10.123.0.10")),
    ("ipv6-host", _set("ssh.host", "fd00::10")),
    ("jump-host", _set("ssh.jump_host", {"host": "bastion.example.org", "port": 2222,
                                         "user": "gw", "key": {"path": "/etc/gw/jump"},
                                         "host_keys": [JUMP_KEY]})),
    ("key-by-path", _set("accounts.community.key", {"path": "/etc/gridgate/keys/alpha"})),
    ("mapped", _set("accounts", {"mode": "mapped", "mapped": {
        "alice": {"user": "gwalice", "key": {"secret": "alice"}},
        "bob@example.org": {"user": "gwbob", "key": {"secret": "bob"}}}})),
    ("binaries", _set("scheduler.binaries", {"sbatch": "/opt/slurm/bin/sbatch"})),
    ("scheduler-extras", _set("scheduler", {
        "kind": "slurm", "account": "proj-42", "submit_args": ["--qos=gateway"],
        "timezone": "Europe/Berlin"})),
    ("job-setup", _set("job_setup", ["module purge", "umask 077"])),
    ("sge", _sge),
    ("pbs-no-mpi", _all(_set("scheduler", {"kind": "pbs"}), _set("mpi_flavors", []))),
    ("pbs-options", _all(_set("scheduler", {
        "kind": "pbs", "keep_files": "oe", "accounting_dir": "/var/spool/pbs/server_priv/acct"}),
        _set("mpi_flavors", []))),
    ("torque", _all(_set("scheduler", {"kind": "pbs", "pbs_server": "torque",
                                       "binaries": {"qselect": "/usr/local/bin/qselect"}}),
                    _set("mpi_flavors", []))),
    ("lsf-no-memory-requests", _all(_set("scheduler", {"kind": "lsf", "memory_requests": False}),
                                    _set("mpi_flavors", []))),
    ("sge-memory-resource", _all(_sge, _set("scheduler.memory_resource", "h_vmem"))),
    ("lsf-mpiexec", _all(_set("scheduler", {"kind": "lsf"}),
                         _set("mpi_flavors", [{"name": "impi", "launchers": ["mpiexec"]}]))),
    ("both-launchers", _set("mpi_flavors.1", {
        "name": "mpich", "launchers": ["srun", "mpirun"], "command": ["mpirun.mpich"],
        "ranks_per_node_args": ["-ppn", "{n}"], "srun_mpi": "pmi2"})),
    ("drained", _set("state", "drained")),
    ("defaults", _all(_del("charge_factor"), _del("max_concurrent_jobs"), _del("state"),
                      _del("mpi_flavors"), _del("containers"))),
    ("descriptive", _all(_set("descriptive", True), _set("state", "drained"), _del("ssh"),
                         _del("accounts"), _del("scratch_root"))),
    ("template", _all(_set("provisioned_by", "testbed"), _set("ssh.host_keys", []))),
    ("local", _all(_set("scheduler", {"kind": "local"}), _del("ssh"), _del("accounts"),
                   _set("mpi_flavors", []))),
]


@pytest.mark.parametrize("mutate", [pytest.param(m, id=i) for i, m in GOOD_VARIANTS])
def test_good_variants_are_accepted_and_round_trip(mutate: Callable[[Data], None],
                                                   good: Data) -> None:
    mutate(good)
    config = validate_site_config(good)
    # What dump_site_config writes reads back to the same config.
    assert parse_site_config(dump_site_config(config)) == config


def test_walltimes_are_seconds_and_unlimited_is_none(good: Data) -> None:
    good["partitions"][0]["max_walltime"] = "1-02:03:04"
    good["partitions"][1]["max_walltime"] = "unlimited"
    config = validate_site_config(good)
    assert config.partitions[0].max_walltime == 93784
    assert config.partitions[1].max_walltime is None
    assert "max_walltime: UNLIMITED" in dump_site_config(config)


def test_yaml_sexagesimal_walltime_means_the_same_seconds() -> None:
    # YAML 1.1 reads an unquoted 1:30:00 as the base-60 integer 5400: the same seconds.
    text = dump_site_config(validate_site_config(GOOD)).replace(
        "max_walltime: 1800", "max_walltime: 1:30:00")
    assert parse_site_config(text).partitions[0].max_walltime == 5400


def test_template_is_valid_but_not_complete(good: Data) -> None:
    good["provisioned_by"] = "testbed"
    good["ssh"]["host_keys"] = []
    template = validate_site_config(good)
    assert not template.is_complete
    filled = with_updates(template, {"ssh": {"host": "10.99.0.10", "host_keys": [HOST_KEY]}})
    assert filled.is_complete
    assert filled.ssh is not None and filled.ssh.host == "10.99.0.10"
    assert filled.ssh.port == 22  # merged, not replaced
    assert filled.partitions == template.partitions


def test_with_updates_validates_the_result() -> None:
    config = validate_site_config(GOOD)
    with pytest.raises(SiteConfigError) as caught:
        with_updates(config, {"ssh": {"host_keys": []}}, "rendered/alpha.yaml")
    assert [p.field for p in caught.value.problems] == ["ssh.host_keys"]
    assert caught.value.source == "rendered/alpha.yaml"


def test_descriptive_site_is_never_complete(good: Data) -> None:
    good.update(descriptive=True, state="drained")
    assert not validate_site_config(good).is_complete


def test_several_problems_are_reported_together(good: Data) -> None:
    good["name"] = "Bad"
    good["ssh"]["port"] = 0
    good["partitions"][0]["cores_per_node"] = -1
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(good, "x.yaml")
    fields = [p.field for p in caught.value.problems]
    assert fields == ["name", "ssh.port", "partitions[debug].cores_per_node"]
    rendered = caught.value.render().splitlines()
    assert rendered[0] == "x.yaml: invalid site configuration (3 problems):"
    assert rendered[1].startswith("  name: 'Bad' is not a valid site name")


def test_private_key_is_never_echoed_in_the_error(good: Data) -> None:
    good["accounts"]["community"]["key"] = PRIVATE_OPENSSH
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(good)
    body = PRIVATE_OPENSSH.splitlines()[1]
    assert body not in caught.value.render()
    assert body not in caught.value.detail


def test_scheduler_command_paths(good: Data) -> None:
    good["scheduler"]["binaries"] = {"sacct": "/opt/slurm/bin/sacct"}
    scheduler = validate_site_config(good).scheduler
    assert scheduler.command("sacct") == "/opt/slurm/bin/sacct"
    assert scheduler.command("sbatch") == "/usr/bin/sbatch"
    good["scheduler"].pop("bin_dir")
    assert validate_site_config(good).scheduler.command("squeue") == "squeue"


def test_accounts_and_launcher_argv(good: Data) -> None:
    config = validate_site_config(good)
    assert config.accounts is not None
    assert config.accounts.mode == AccountMode.COMMUNITY
    community = config.accounts.account_for("anyone")
    assert community is not None and community.user == "gwcomm"
    assert config.mpi_flavors[0].argv == ["mpirun.openmpi"]
    assert config.mpi_flavors[1].argv == []  # srun only
    good["mpi_flavors"][0].pop("command")
    assert validate_site_config(good).mpi_flavors[0].argv == ["mpirun"]
    good["mpi_flavors"][0]["launchers"] = ["mpiexec"]
    assert validate_site_config(good).mpi_flavors[0].argv == ["mpiexec"]
    good["accounts"] = {"mode": "mapped", "mapped": {
        "alice": {"user": "gwalice", "key": {"secret": "alice"}}}}
    mapped = validate_site_config(good).accounts
    assert mapped is not None
    alice = mapped.account_for("alice")
    assert alice is not None and alice.user == "gwalice"
    assert mapped.account_for("mallory") is None


def test_key_references_resolve(tmp_path: Path) -> None:
    assert resolve_key_path(KeyRef(path="/etc/gw/k"), None) == Path("/etc/gw/k")
    assert resolve_key_path(KeyRef(secret="k1"), tmp_path) == tmp_path / "k1"
    with pytest.raises(Invalid, match="GRIDGATE_SECRETS_DIR"):
        resolve_key_path(KeyRef(secret="k1"), None)
    assert KeyRef(secret="k1").describe() == "secret k1"


def test_models_are_frozen() -> None:
    config = validate_site_config(GOOD)
    with pytest.raises(ValueError, match="frozen"):
        config.name = "other"  # type: ignore[misc]
    assert SiteConfig.model_validate(copy.deepcopy(GOOD)) == config


# Every name a site config checks against a pattern, ending in a newline (Python's `$`
# matches before a final newline, so `^...$` checks let these through).
TRAILING_NEWLINE = [
    ("name", "alpha\n", "name"),
    ("scheduler.account", "proj1\n", "scheduler.account"),
    ("accounts.community.user", "gwcomm\n", "accounts.community.user"),
    ("accounts.community.key", {"secret": "gwcomm_ed25519\n"}, "accounts.community.key"),
    ("ssh.host", "login.alpha.example.org\n", "ssh.host"),
    ("partitions.1.name", "long\n", "partitions[long\n].name"),
    ("partitions.0.max_walltime", "00:30:00\n", "partitions[debug].max_walltime"),
    ("mpi_flavors.0.name", "openmpi\n", "mpi_flavors[openmpi\n].name"),
    ("mpi_flavors.1.srun_mpi", "pmi2\n", "mpi_flavors[mpich].srun_mpi"),
    ("containers.runtimes.0.version", "1.2.5\n", "containers.runtimes[0].version"),
    ("containers.bind_prefixes.0", "/project/shared\n", "containers.bind_prefixes[0]"),
]


@pytest.mark.parametrize(("path", "value", "field"), TRAILING_NEWLINE,
                         ids=[t[0] for t in TRAILING_NEWLINE])
def test_names_ending_in_a_newline_are_refused(path: str, value: Any, field: str,
                                               good: Data) -> None:
    _set(path, value)(good)
    with pytest.raises(SiteConfigError) as caught:
        validate_site_config(good, "alpha.yaml")
    fields = [p.field for p in caught.value.problems]
    assert any(f.startswith(field) for f in fields), fields
