"""The compiled engine is the pure one, compiled (setup.py: GRIDGATE_COMPILE=1 builds the
modules it lists with mypyc). They are built here as `pip install .` builds them (setup.py,
with a C compiler and Python's headers, which tests/run.sh installs), loaded in a process
of their own under their real names, and there:
- the engine's own tests pass on them (EASY against the rules written out plainly on 300
  random snapshots, the deep queue, the profiles built on them);
- a prediction walk of a log whose queue runs deeper than the exact part (`EXACT`) gives
  the report the pure engine gives here, to the last bit."""

from __future__ import annotations

import json
import random
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts
from gateway.scheduling.queues.deep_queue import EXACT
from gateway.scheduling.queues.easy import SimJob, replay
from gateway.scheduling.swf import parse_job

ROOT = Path(__file__).resolve().parents[2]
PROCESSORS = 64
ENGINE_TESTS = ("tests/scheduling/test_easy.py", "tests/scheduling/test_deep_queue.py",
                "tests/scheduling/test_queue_profile.py")

# Run in the child: the compiled modules replace the pure ones before anything imports
# them, then the engine's tests run, then the walk (its report on stdout).
CHILD = """
import importlib, importlib.util, json, sys
from pathlib import Path
build, names, log = Path(sys.argv[1]), sys.argv[2].split(), sys.argv[3]
processors = int(sys.argv[4])
sys.path.append(str(build))  # mypyc's shared library for the group of modules
for name in names:
    parent, _, leaf = name.rpartition(".")
    [binary] = (build / parent.replace(".", "/")).glob(leaf + ".*.so")
    spec = importlib.util.spec_from_file_location(name, binary)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    setattr(importlib.import_module(parent), leaf, module)
import pytest
code = pytest.main(["-q", "-p", "no:cacheprovider", *sys.argv[5:]])
for name in names:  # still the compiled ones after the tests
    assert sys.modules[name].__file__.endswith(".so"), sys.modules[name].__file__
if code:
    sys.exit(f"the engine's tests failed on the compiled build (pytest exit {code})")
from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts
from gateway.scheduling.swf import parse_job
jobs = [parse_job(line) for line in Path(log).read_text().splitlines()]
print(json.dumps(evaluate_forecasts(jobs, processors)))
"""


def compiled_modules() -> list[str]:
    """setup.py's list, as module names (setup.py runs `setup()` only as a script)."""
    paths: list[str] = runpy.run_path(str(ROOT / "setup.py"))["COMPILED"]
    return [path.removesuffix(".py").replace("/", ".") for path in paths]


def deep_log(seed: int, count: int) -> list[str]:
    """SWF lines of a log whose waits come from EASY itself, with bursts of jobs that
    leave more than `EXACT` waiting: the walk's projections take the deep queue's path."""
    rng = random.Random(seed)
    jobs, submit = [], 0.0
    for key in range(count):
        # Of every 400 jobs, the first 200 come at once, the rest spread out.
        submit += 0.0 if key % 400 < 200 else rng.expovariate(1 / 1000)
        limit = rng.choice((600, 3600, 14400))
        jobs.append(SimJob(key, int(submit), rng.choice((1, 2, 4, 8, 16, 32)),
                           rng.randint(1, limit), limit))
    started = sorted(replay(jobs, PROCESSORS), key=lambda pair: pair[0].key)
    bursts = {job.submit for job in jobs[::400]}
    assert max(sum(job.submit <= burst < start for job, start in started)
               for burst in bursts) > EXACT
    lines = []
    for job, start in started:
        wait = int(start) - int(job.submit)
        lines.append(f"{job.key + 1} {int(job.submit)} {wait} {int(job.runtime)} {job.procs}"
                     f" -1 -1 {job.procs} {int(job.estimate)} -1 1 {1 + job.key % 7}"
                     " 1 -1 1 -1 -1 -1")
    return lines


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """setup.py's compiled modules, built in place in a copy of their sources."""
    where = tmp_path_factory.mktemp("compiled")
    shutil.copy(ROOT / "setup.py", where)
    for name in compiled_modules():
        parts = name.split(".")
        for depth in range(1, len(parts)):  # the packages above it
            package = Path(*parts[:depth]) / "__init__.py"
            (where / package).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / package, where / package)
        shutil.copy(ROOT / Path(*parts).with_suffix(".py"), where / Path(*parts).with_suffix(".py"))
    done = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                          cwd=where, env={"PATH": "/usr/bin:/bin", "GRIDGATE_COMPILE": "1"},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return where


def test_the_compiled_engine_passes_its_tests_and_walks_a_log_to_the_bit(
        build: Path, tmp_path: Path) -> None:
    lines = deep_log(seed=7, count=2400)
    log = tmp_path / "deep.swf"
    log.write_text("\n".join(lines) + "\n")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(build), " ".join(compiled_modules()), str(log),
         str(PROCESSORS), *ENGINE_TESTS],
        cwd=ROOT, capture_output=True, text=True, check=False)
    assert child.returncode == 0, child.stdout[-5000:] + child.stderr[-3000:]
    compiled = json.loads(child.stdout.splitlines()[-1])
    pure = evaluate_forecasts([parse_job(line) for line in lines], PROCESSORS)
    assert compiled == json.loads(json.dumps(pure))
