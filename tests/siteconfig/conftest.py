"""Shared data for site config tests: real keys (made with `cryptography`), a valid config."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519


def ed25519_public_line(comment: str = "root@site") -> str:
    """A fresh OpenSSH ed25519 public key line, as in ssh_host_ed25519_key.pub."""
    key = ed25519.Ed25519PrivateKey.generate().public_key()
    raw = key.public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return f"{raw.decode()} {comment}"


def ecdsa_public_line() -> str:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    return key.public_bytes(serialization.Encoding.OpenSSH,
                            serialization.PublicFormat.OpenSSH).decode()


def ed25519_private_openssh() -> str:
    """A fresh private key in OpenSSH format (what must never appear in a config)."""
    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                             serialization.NoEncryption()).decode()


def ec_private_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


HOST_KEY = ed25519_public_line()
JUMP_KEY = ed25519_public_line("root@bastion")

GOOD: dict[str, Any] = {
    "name": "alpha",
    "description": "A test cluster",
    "location": "Somewhere",
    "scheduler": {"kind": "slurm", "version": "22.05.8", "bin_dir": "/usr/bin"},
    "ssh": {"host": "login.alpha.example.org", "port": 22, "host_keys": [HOST_KEY]},
    "accounts": {"mode": "community",
                 "community": {"user": "gwcomm", "key": {"secret": "gwcomm_ed25519"}}},
    "partitions": [
        {"name": "debug", "default": True, "max_nodes": 2, "max_walltime": "00:30:00",
         "cores_per_node": 16, "memory_mb_per_node": 64000},
        {"name": "long", "max_nodes": 8, "nodes": 32, "max_walltime": "2-00:00:00",
         "cores_per_node": 32, "memory_mb_per_node": 128000},
    ],
    "interconnect": {"name": "InfiniBand", "latency_us": 1.2, "bandwidth_mbs": 12000},
    "mpi_flavors": [
        {"name": "openmpi", "launchers": ["mpirun"], "command": ["mpirun.openmpi"],
         "ranks_per_node_args": ["--map-by", "ppr:{n}:node"],
         "setup": ["module load openmpi"]},
        {"name": "mpich", "launchers": ["srun"], "srun_mpi": "pmi2"},
    ],
    "containers": {
        "runtimes": [{"kind": "apptainer", "version": "1.2.5"}],
        "bind_prefixes": ["/project/shared"],
    },
    "scratch_root": "/scratch/gridgate",
    "charge_factor": 1.5,
    "max_concurrent_jobs": 100,
    "state": "enabled",
}


@pytest.fixture
def good() -> dict[str, Any]:
    """A fresh deep copy of a valid remote Slurm config, to break in one place."""
    return copy.deepcopy(GOOD)
