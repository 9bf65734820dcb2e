"""The local site: each job a process group on this machine, under a detached runner."""

from adapters.local.adapter import LocalAdapter

__all__ = ["LocalAdapter"]
