"""Reading site configs from YAML files and directories."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gateway.siteconfig import (
    SiteConfigError,
    dump_site_config,
    fill_template,
    load_site_config,
    load_site_configs,
    parse_site_config,
    validate_site_config,
    with_updates,
)
from gateway.siteconfig.keys import fingerprint, parse_host_key
from tests.siteconfig.conftest import GOOD, HOST_KEY


def _write(directory: Path, filename: str, **changes: object) -> Path:
    data = {**GOOD, **changes}
    path = directory / filename
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _problems(exc: SiteConfigError) -> dict[str, str]:
    return {p.field: p.message for p in exc.problems}


def test_load_a_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "alpha.yaml")
    config = load_site_config(path)
    assert config == validate_site_config(GOOD)


def test_missing_file_names_the_file(tmp_path: Path) -> None:
    with pytest.raises(SiteConfigError) as caught:
        load_site_config(tmp_path / "nope.yaml")
    assert caught.value.source == str(tmp_path / "nope.yaml")
    assert _problems(caught.value) == {"(file)": "cannot read it: No such file or directory"}


@pytest.mark.parametrize(("text", "field", "words"), [
    pytest.param("", "(config)", "the file is empty", id="empty"),
    pytest.param("- a\n- b\n", "(config)", "must hold one mapping", id="list"),
    pytest.param("name: [unclosed\n", "line 2", "not valid YAML", id="syntax"),
    pytest.param("name: a\nlocation: x\nname: b\n", "line 3",
                 "duplicate key 'name' (first at line 1): keep one", id="duplicate-key"),
    pytest.param("scheduler:\n  kind: slurm\n  kind: sge\n", "line 3", "duplicate key 'kind'",
                 id="duplicate-nested-key"),
])
def test_yaml_problems(text: str, field: str, words: str) -> None:
    with pytest.raises(SiteConfigError) as caught:
        parse_site_config(text, "x.yaml")
    problems = _problems(caught.value)
    assert field in problems, problems
    assert words in problems[field]


def test_yaml_anchors_and_merge_keys_still_work() -> None:
    # A merge key (<<) brings keys that the mapping overrides: not duplicates.
    text = dump_site_config(validate_site_config(GOOD)).split("partitions:")[0] + """
partitions:
- &debug {name: debug, default: true, max_nodes: 2, max_walltime: 1800,
          cores_per_node: 16, memory_mb_per_node: 64000}
- <<: *debug
  name: long
  default: false
  max_nodes: 8
interconnect: {name: IB, latency_us: 1, bandwidth_mbs: 1}
scratch_root: /scratch
"""
    config = parse_site_config(text)
    long = config.partition("long")
    assert long is not None and long.max_nodes == 8 and long.cores_per_node == 16
    assert not long.default


def test_directory_of_configs(tmp_path: Path) -> None:
    _write(tmp_path, "beta.yml", name="beta")
    _write(tmp_path, "alpha.yaml")
    (tmp_path / "README.md").write_text("not a config\n")
    (tmp_path / "sub").mkdir()
    _write(tmp_path / "sub", "gamma.yaml", name="gamma")  # not recursive
    configs = load_site_configs(tmp_path)
    assert [c.name for c in configs] == ["alpha", "beta"]


def test_directory_refuses_duplicates_and_misnamed_files_all_at_once(tmp_path: Path) -> None:
    _write(tmp_path, "alpha.yaml")
    _write(tmp_path, "alpha.yml")
    _write(tmp_path, "other.yaml", name="beta")
    _write(tmp_path, "broken.yaml", name="broken", charge_factor=-1)
    with pytest.raises(SiteConfigError) as caught:
        load_site_configs(tmp_path)
    problems = _problems(caught.value)
    assert caught.value.source == str(tmp_path)
    assert "already defined in alpha.yaml: keep one file per site" in problems["alpha.yml: name"]
    assert "rename the file to beta.yaml" in problems["other.yaml: name"]
    assert "greater than 0" in problems["broken.yaml: charge_factor"]


def test_directory_refuses_unfilled_templates(tmp_path: Path) -> None:
    ssh = {**GOOD["ssh"], "host_keys": []}
    _write(tmp_path, "alpha.yaml", provisioned_by="testbed", ssh=ssh)
    with pytest.raises(SiteConfigError) as caught:
        load_site_configs(tmp_path)
    message = _problems(caught.value)["alpha.yaml: ssh.host_keys"]
    assert "`gridgate testbed up`" in message and "point the gateway" in message
    (template,) = load_site_configs(tmp_path, include_templates=True)
    # What the testbed does: fill in, write the completed copy, load that directory.
    done = tmp_path / "done"
    done.mkdir()
    filled = with_updates(template, {"ssh": {"host_keys": [HOST_KEY]}})
    (done / "alpha.yaml").write_text(dump_site_config(filled))
    assert load_site_configs(done) == [filled]


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(SiteConfigError) as caught:
        load_site_configs(tmp_path / "none")
    assert "GRIDGATE_SITE_CONFIGS_DIR" in _problems(caught.value)["(directory)"]


def test_empty_directory_has_no_sites(tmp_path: Path) -> None:
    assert load_site_configs(tmp_path) == []


def test_host_key_parsing_matches_openssh(tmp_path: Path) -> None:
    # A key made by OpenSSH itself parses, and our fingerprint is the one ssh-keygen shows.
    key = tmp_path / "host_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    line = key.with_suffix(".pub").read_text().strip()
    key_type, blob = parse_host_key(line)
    shown = subprocess.run(["ssh-keygen", "-l", "-f", str(key.with_suffix(".pub"))],
                           check=True, capture_output=True, text=True).stdout.split()[1]
    assert key_type == "ssh-ed25519" and fingerprint(blob) == shown
    data = {**GOOD, "ssh": {**GOOD["ssh"], "host_keys": [line]}}
    assert validate_site_config(data).ssh is not None


def test_fill_a_shipped_template(tmp_path: Path) -> None:
    """What `gridgate testbed up` does with site-configs/parnass2.yaml."""
    template = load_site_config(Path(__file__).resolve().parents[2] / "site-configs" /
                                "parnass2.yaml")
    keys = {user: f"/run/tb/keys/{user}" for user in ("gwcomm", "gwalice", "gwbob")}
    filled = fill_template(template, host="10.200.0.12", port=2222, host_keys=[HOST_KEY],
                           key_paths=keys, source="state/parnass2.yaml")
    assert filled.is_complete and filled.ssh is not None
    assert (filled.ssh.host, filled.ssh.port, filled.ssh.host_keys) == \
        ("10.200.0.12", 2222, [HOST_KEY])
    assert filled.accounts is not None
    alice = filled.accounts.account_for("alice")
    assert alice is not None and alice.key.path == "/run/tb/keys/gwalice"
    assert alice.key.secret is None
    assert filled.partitions == template.partitions
    (tmp_path / "parnass2.yaml").write_text(dump_site_config(filled))
    assert load_site_configs(tmp_path) == [filled]


def test_fill_template_needs_every_key() -> None:
    template = load_site_config(Path(__file__).resolve().parents[2] / "site-configs" /
                                "parnass2.yaml")
    with pytest.raises(SiteConfigError) as caught:
        fill_template(template, host="10.0.0.1", host_keys=[HOST_KEY],
                      key_paths={"gwalice": "/k/a"})
    assert list(_problems(caught.value)) == ["accounts.mapped.bob.key"]
    with pytest.raises(SiteConfigError) as caught:
        fill_template(template, host="10.0.0.1", host_keys=[],
                      key_paths={"gwalice": "/k/a", "gwbob": "/k/b"})
    assert list(_problems(caught.value)) == ["ssh.host_keys"]
    with pytest.raises(SiteConfigError):
        fill_template(validate_site_config(GOOD), host="h", host_keys=[HOST_KEY], key_paths={})
