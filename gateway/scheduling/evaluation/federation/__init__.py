"""The federation simulator: sites replayed event by event (`engine.py`), fed from workload
logs (`trace.py`), routed by gridgate's own router (`production_router.py`) or a baseline
(`baselines.py`), and summed up (`metrics.py`); `replay_check.py` validates the engine on a
real log. Its entry points are in `evaluation/simulation.py`."""
