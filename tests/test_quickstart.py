"""The README's quick start, run as written: it must print the table and the model."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quickstart_prints_table_and_model() -> None:
    env = {**os.environ, "GRIDGATE_VENV": sys.prefix}
    for name in [k for k in env if k.startswith("GRIDGATE_") and k != "GRIDGATE_VENV"]:
        del env[name]  # the quick start must need no configuration
    done = subprocess.run(["bash", str(ROOT / "examples/pingpong/quickstart.sh")], env=env,
                          capture_output=True, text=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "COMPLETED (exit 0)" in out
    # Issue 28: the spec's output is collected (the script's args keep `--out results.jsonl`).
    assert "collected 1 output(s)" in out
    assert "    1 MiB   1048576" in out, "the table reaches 1 MiB"
    assert "      0 B         0" in out, "the table starts at 0 B"
    assert "Two-regime model" in out and "for n <=" in out and "for n >" in out
    # Issue 14: the program was uploaded by `gridgate submit` as the spec's local input,
    # and the end says how to put gridgate on the PATH.
    assert "Input pingpong.py: " in out
    assert f'export PATH="{sys.prefix}/bin:$PATH"' in out and "pipx install '" in out
