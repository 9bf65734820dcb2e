"""gridgate's build: the metadata is in pyproject.toml; this adds the compiled engine.

With GRIDGATE_COMPILE=1, `pip install .` compiles the modules in `COMPILED` with mypyc
(C extensions from the same typed sources; a C compiler and Python's headers needed):
the EASY projection engine, where the simulator and the prediction walk spend most of
their time (docs/design/predictors.md, "Speed of the walk"; a routing pass projects each
site once and spends its time in forecasts). Without it, or in an
editable install, they stay pure Python and behave the same (tests/scheduling/
test_compiled_engine.py runs the engine's tests on the compiled build).
"""

import os

from setuptools import setup

COMPILED = ["gateway/scheduling/queues/easy.py", "gateway/scheduling/queues/deep_queue.py"]


def compiled_engine() -> list[object]:
    """The engine's C extensions when GRIDGATE_COMPILE=1 asks for them, else none."""
    if os.environ.get("GRIDGATE_COMPILE") != "1":
        return []
    from mypyc.build import mypycify  # a build requirement only then (build_backend.py)

    # Not the project's mypy configuration: its pydantic plugin is not a build requirement.
    return list(mypycify(["--config-file=", "--strict", *COMPILED], opt_level="3"))


if __name__ == "__main__":  # setuptools runs it so; the test imports COMPILED
    setup(ext_modules=compiled_engine())
