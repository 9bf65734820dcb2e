"""A spec's `deliver` entries: destinations parsed with full matches, globs that match a
path literally, and where each matched output goes."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gateway.domain.deliveries import (
    Delivery,
    DestinationKind,
    file_url_path,
    literal_glob,
    parse_destination,
)
from gateway.domain.jobspec import JobSpec
from rules import output_globs


def test_file_urls_name_normal_absolute_paths() -> None:
    assert file_url_path("file:///srv/a b/x.txt") == "/srv/a b/x.txt"  # as written
    assert file_url_path("file://localhost/srv/x") == "/srv/x"
    for bad in ("file://host/srv/x", "file://srv/x", "file:///srv/../etc/x", "file:///srv//x",
                "file:///srv/x/", "file:///", "file:///srv/x\n", "file:///srv/\x00x",
                "file:///srv/./x", "http:///srv/x"):
        with pytest.raises(ValueError):
            file_url_path(bad)


def test_destinations() -> None:
    assert parse_destination("file:///srv/x").kind is DestinationKind.FILE
    assert parse_destination("file:///srv/dir/", directory=True).target == "/srv/dir"
    assert parse_destination("https://s.example.org/b/k?X-Sig=1").kind is DestinationKind.HTTPS
    for bad, says in (("s3://b/k", "cannot send outputs to s3"),
                      ("ftp://h/k", "cannot send outputs to ftp"),
                      ("https://u:p@h/k", "credentials"),
                      ("https:///k", "host"),
                      ("https://h/a b", "spaces"),
                      ("/srv/x", "cannot send outputs")):
        with pytest.raises(ValueError, match=says):
            parse_destination(bad)
    with pytest.raises(ValueError, match="query"):
        parse_destination("https://h/dir/?sig=1", directory=True)


def test_a_literal_glob_matches_only_its_path() -> None:
    path = "tes/out/a[1]*?.txt"
    glob = literal_glob(path)
    assert output_globs.matches(glob, path)
    assert not output_globs.matches(glob, "tes/out/a1xy.txt")


def test_where_matches_go() -> None:
    one = Delivery(glob="out/r.txt", url="file:///srv/r.txt")
    assert one.url_of("out/r.txt") == "file:///srv/r.txt"
    tree = Delivery(glob="out/**", strip="out", url="https://h/run/")
    assert tree.url_of("out/a/b.txt") == "https://h/run/a/b.txt"
    with pytest.raises(ValidationError, match="below strip"):
        Delivery(glob="other/*", strip="out", url="file:///srv/d")
    with pytest.raises(ValidationError, match="relative"):
        Delivery(glob="/abs", url="file:///srv/d")


def test_deliveries_need_fetched_outputs() -> None:
    base = {"name": "j", "executable": "/bin/true",
            "deliver": [{"glob": "r.txt", "url": "file:///srv/r.txt"}]}
    assert JobSpec.model_validate(base).collected == ["r.txt"]
    with pytest.raises(ValidationError, match="outputs_mode fetch"):
        JobSpec.model_validate({**base, "outputs_mode": "keep"})
    both = JobSpec.model_validate({**base, "outputs": ["r.txt", "*.log"]})
    assert both.collected == ["r.txt", "*.log"]
