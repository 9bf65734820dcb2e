"""Every console block of the guides marked `<!-- runnable -->` runs as written, in order,
against a live gateway, as a person who followed the guide from the start: each `$ `
command must succeed, and each output line shown must be printed (ids, times and numbers
may differ; an id printed earlier is used in later commands as the guide's id was)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.cli.helpers import Cli, approve_device_code
from tests.client.live import LiveGateway, serve_gateway

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
MARK = "<!-- runnable -->"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
# A run of hex digits that has a decimal digit or is 4+ long (an id, a hash, a number).
NUMBER_OR_ID = re.compile(r"[0-9a-f]{4,}|[0-9a-f]*\d[0-9a-f]*")
SHORT_ID = re.compile(r"(?<![0-9a-f-])[0-9a-f]{8}(?![0-9a-f-])")
USER, PASSWORD = "alice", "correct horse battery staple"


@dataclass
class Command:
    line: str
    shown: list[str] = field(default_factory=list)


@dataclass
class Block:
    page: str
    line: int
    commands: list[Command]


def runnable_blocks(page: Path) -> list[Block]:
    """The marked fenced blocks of one page: `$ ` lines (a trailing backslash continues
    one), each followed by the output it shows."""
    lines = page.read_text().splitlines()
    blocks: list[Block] = []
    for number, text in enumerate(lines):
        if text.strip() != MARK:
            continue
        opening = number + 1
        while not lines[opening].strip():
            opening += 1
        assert lines[opening].startswith("```"), f"{page}:{number + 1}: {MARK} before no block"
        commands: list[Command] = []
        index = opening + 1
        while not lines[index].startswith("```"):
            text = lines[index]
            if text.startswith("$ "):
                command = text[2:]
                while command.endswith("\\"):
                    index += 1
                    command = command[:-1] + lines[index].strip()
                commands.append(Command(command))
            elif text.strip():
                assert commands, f"{page}:{index + 1}: output before any command"
                commands[-1].shown.append(text)
            index += 1
        blocks.append(Block(page.name, opening + 1, commands))
    return blocks


def normalized(line: str) -> str:
    """What must be the same in a shown and a printed line: ids (hex runs), numbers and
    the widths of columns (which follow them) may differ."""
    line = UUID.sub("U", line)
    # One token for both: a count that grows from 587 to 1177 becomes a 4-digit run,
    # which a hex-only rule would read as an id.
    line = NUMBER_OR_ID.sub("N", line)
    return " ".join(line.split())


def ids_in(line: str) -> list[str]:
    return UUID.findall(line) + SHORT_ID.findall(UUID.sub("", line))


class Session:
    """One person's shell: the same directory and login for every block of a page."""

    def __init__(self, url: str, home: Path) -> None:
        self.cwd = home / "work"
        self.cwd.mkdir()
        (self.cwd / "examples").symlink_to(ROOT / "examples")  # as from the clone
        self.env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
                    "GRIDGATE_URL": url, "GRIDGATE_CONFIG_DIR": str(home / "config"),
                    "COLUMNS": "80", "HOME": str(home), "TZ": "UTC"}
        self.ids: dict[str, str] = {}

    def run(self, block: Block) -> None:
        for command in block.commands:
            line = command.line
            for shown_id, real_id in self.ids.items():
                line = line.replace(shown_id, real_id)
            done = subprocess.run(["bash", "-c", line], cwd=self.cwd, env=self.env,
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=300)
            printed = (done.stdout + done.stderr).splitlines()
            where = f"{block.page}:{block.line}: $ {command.line}"
            assert done.returncode == 0, f"{where}\nexited {done.returncode}\n" + "\n".join(printed)
            left = list(printed)
            for shown in command.shown:
                match = next((p for p in left if normalized(p) == normalized(shown)), None)
                assert match is not None, (f"{where}\nshown:   {shown}\nprinted:\n"
                                           + "\n".join(printed))
                left.remove(match)
                for shown_id, real_id in zip(ids_in(shown), ids_in(match), strict=True):
                    self.ids[shown_id] = real_id
                    self.ids.setdefault(shown_id[:8], real_id[:8])


def test_numbers_and_ids_may_differ_in_length_and_digits() -> None:
    shown = '{"bytes": 0, "repetitions": 587, "half_round_trip_s": 1.18e-06, "batches": 15}'
    printed = '{"bytes": 0, "repetitions": 1177, "half_round_trip_s": 1.7e-06, "batches": 15}'
    assert normalized(shown) == normalized(printed)
    assert normalized("89ee4133  COMPLETED  4s") == normalized("deadbeef  COMPLETED  12s")
    assert normalized("exit 0: done") != normalized("exit 0: failed")


def test_a_drifted_guide_fails(tmp_path: Path) -> None:
    page = tmp_path / "guide.md"
    page.write_text(f"{MARK}\n```\n$ echo job 0123abcd-0000-4000-8000-00000000beef done\n"
                    "job 89ee4133-2c2e-4f2d-a354-29108e5c02a6 done\n"
                    "$ test 89ee4133 = 0123abcd && echo same\nsame\n"
                    "$ echo two lines\nthree lines\n```\n")
    [block] = runnable_blocks(page)
    with pytest.raises(AssertionError, match="shown:   three lines"):
        Session("http://127.0.0.1:9", tmp_path).run(block)
    # (The second command passed: the id printed replaced the guide's id in it.)


def test_a_failing_command_fails(tmp_path: Path) -> None:
    page = tmp_path / "guide.md"
    page.write_text(f"{MARK}\n```\n$ gridgate no-such-command\n```\n")
    with pytest.raises(AssertionError, match="exited 2"):
        Session("http://127.0.0.1:9", tmp_path).run(runnable_blocks(page)[0])


PAGES = sorted(p for p in DOCS.rglob("*.md") if MARK in p.read_text())


def test_the_guides_mark_their_runnable_blocks() -> None:
    # A guide with commands but no marked block cannot drift unnoticed only if it is here.
    names = {str(p.relative_to(DOCS)) for p in PAGES}
    assert {"getting-started/first-hour.md", "design/simulator.md",
            "researchers/routing.md"} <= names, names


@pytest.fixture
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with serve_gateway(tmp_path_factory.mktemp("gateway")) as gw:
        yield gw


def logged_in(gateway: LiveGateway, home: Path) -> Session:
    """The first steps of "Your first hour", done as a person does them: `gridgate admin user add`,
    then `gridgate login` with the device flow approved in the "browser"."""
    session = Session(gateway.url, home)
    cli = Cli(gateway, home / "config")
    cli("admin", "user", "add", USER, "--password-stdin", input=PASSWORD + "\n")
    login = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "login"],
                             env={**session.env, **cli.env}, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert login.stderr is not None
    seen = ""
    while not (code := re.search(r"enter the code: (\S+)", seen)):
        line = login.stderr.readline()
        assert line, f"login ended early: {seen}"
        seen += line
    approve_device_code(gateway, code.group(1), USER, PASSWORD)
    _, rest = login.communicate(timeout=120)
    assert login.returncode == 0, seen + rest
    return session


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_runnable_blocks_run_as_written(page: Path, gateway: LiveGateway,
                                        tmp_path: Path) -> None:
    session = logged_in(gateway, tmp_path)
    blocks = runnable_blocks(page)
    assert blocks
    for block in blocks:
        session.run(block)
