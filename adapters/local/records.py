"""The JSON records the adapter and the runner exchange through a job's control directory."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from adapters.base import NativeState
from adapters.local.procs import ProcessId
from adapters.local.sandbox import SandboxConfig
from adapters.reasons import StatusReason, recorded

FORMAT_VERSION = 1


def utcnow() -> datetime:
    return datetime.now(UTC)


def _time(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} is not a timestamp")
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat()


@dataclass(frozen=True)
class LaunchPlan:
    """Exactly what the runner executes: final argv and environment, limits."""

    tag: str
    native_id: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    walltime_seconds: float
    kill_grace_seconds: float
    # How the program is sandboxed; None: it runs as the gateway's account, unconfined.
    sandbox: SandboxConfig | None = None
    # Directories outside the job's the program reads (an unpacked image): read-only.
    reads: tuple[str, ...] = ()

    def to_json(self, **extra: object) -> dict[str, object]:
        """The request.json object; `extra` keys are kept for people, ignored on read."""
        return {
            "version": FORMAT_VERSION,
            "tag": self.tag,
            "native_id": self.native_id,
            "argv": list(self.argv),
            "env": dict(self.env),
            "walltime_seconds": self.walltime_seconds,
            "kill_grace_seconds": self.kill_grace_seconds,
            "sandbox": None if self.sandbox is None else self.sandbox.to_json(),
            "reads": list(self.reads),
            **extra,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LaunchPlan:
        if data.get("version") != FORMAT_VERSION:
            raise ValueError(f"unsupported request version {data.get('version')!r}")
        argv, env = data.get("argv"), data.get("env")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("argv must be a non-empty list of strings")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError("env must map strings to strings")
        tag, native_id = data.get("tag"), data.get("native_id")
        walltime, grace = data.get("walltime_seconds"), data.get("kill_grace_seconds")
        if not isinstance(tag, str) or not isinstance(native_id, str):
            raise ValueError("tag and native_id must be strings")
        if not isinstance(walltime, int | float) or not isinstance(grace, int | float):
            raise ValueError("walltime_seconds and kill_grace_seconds must be numbers")
        sandbox = data.get("sandbox")
        if sandbox is not None and not isinstance(sandbox, dict):
            raise ValueError("sandbox must be an object or null")
        reads = data.get("reads", [])  # absent from requests written before it
        if not isinstance(reads, list) or not all(isinstance(r, str) for r in reads):
            raise ValueError("reads must be a list of strings")
        return cls(tag, native_id, tuple(argv), env, float(walltime), float(grace),
                   None if sandbox is None else SandboxConfig.from_json(sandbox), tuple(reads))


@dataclass(frozen=True)
class Claim:
    """Who owns the job: its runner, or the adapter when it cancels an unstarted job."""

    owner: ProcessId
    by: str
    at: datetime

    def to_json(self) -> dict[str, object]:
        return {**self.owner.to_json(), "by": self.by, "at": _iso(self.at)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Claim:
        at = _time(data.get("at"), "at")
        return cls(ProcessId.from_json(dict(data)), str(data.get("by")), at or utcnow())


@dataclass(frozen=True)
class ChildRecord:
    """The user's program: leader of its own session and process group (pgid = sid = pid)."""

    process: ProcessId
    started_at: datetime

    def to_json(self) -> dict[str, object]:
        return {**self.process.to_json(), "started_at": _iso(self.started_at)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChildRecord:
        started = _time(data.get("started_at"), "started_at")
        if started is None:
            raise ValueError("child record lacks started_at")
        return cls(ProcessId.from_json(dict(data)), started)


@dataclass(frozen=True)
class Outcome:
    """result.json: how the job ended."""

    state: NativeState
    raw_state: str
    exit_code: int | None
    reason: StatusReason | None
    started_at: datetime | None
    ended_at: datetime

    def to_json(self) -> dict[str, object]:
        return {
            "state": self.state.value,
            "raw_state": self.raw_state,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "started_at": _iso(self.started_at),
            "ended_at": _iso(self.ended_at),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Outcome:
        state = NativeState(str(data.get("state")))
        if not state.is_final:
            raise ValueError(f"result state {state} is not final")
        exit_code, reason = data.get("exit_code"), data.get("reason")
        if exit_code is not None and not isinstance(exit_code, int):
            raise ValueError("exit_code must be an integer or null")
        ended = _time(data.get("ended_at"), "ended_at")
        return cls(
            state=state,
            raw_state=str(data.get("raw_state") or state.value.lower()),
            exit_code=exit_code,
            reason=None if reason is None else recorded(str(reason)),
            started_at=_time(data.get("started_at"), "started_at"),
            ended_at=ended or utcnow(),
        )
