"""MPI ping-pong between two ranks: the comms1 kernel of the seed papers (ParkBench).

Rank 0 sends a message to rank 1, which sends it straight back; half of the round-trip
time is the time of one message. Sizes are 0 B, then powers of two up to 1 MiB. Each
size is warmed up, then timed in many short batches whose repetitions are scaled so a
batch takes about --target-seconds; the fastest batch is reported. Other processes on
a shared machine only ever make a batch slower, and with short batches most of them
escape a preemption, so the minimum is a stable estimate.

Rank 0 prints one JSON line per size (and writes them to --out FILE too, if given):
    {"bytes": 1024, "repetitions": 2000, "half_round_trip_s": 1.9e-06, "batches": 3}

Run:  mpiexec -n 2 python pingpong.py [--out results.jsonl]
"""

from __future__ import annotations

import argparse
import json
import sys

from mpi4py import MPI

PING, PONG = 1, 2


def sizes(max_bytes: int) -> list[int]:
    """0, 1, 2, 4, ... up to max_bytes."""
    out = [0]
    n = 1
    while n <= max_bytes:
        out.append(n)
        n *= 2
    return out


def exchange(comm: MPI.Comm, rank: int, buf: bytearray, n: int, reps: int) -> float:
    """`reps` round trips of `n` bytes; returns rank 0's elapsed seconds."""
    message = [buf, n, MPI.BYTE]
    comm.Barrier()
    start = MPI.Wtime()
    if rank == 0:
        for _ in range(reps):
            comm.Send(message, dest=1, tag=PING)
            comm.Recv(message, source=1, tag=PONG)
    else:
        for _ in range(reps):
            comm.Recv(message, source=0, tag=PING)
            comm.Send(message, dest=0, tag=PONG)
    return MPI.Wtime() - start


def calibrate(comm: MPI.Comm, rank: int, buf: bytearray, n: int, target: float,
              most: int) -> int:
    """Repetitions for a batch of about `target` seconds (rank 0 decides, both agree).

    The probe doubles until it lasts a quarter of the target, so one slow round trip
    (a context switch on a busy machine) cannot skew the estimate much.
    """
    probe = 4
    while True:
        # The faster of two probes: one preemption must not shrink the batches.
        elapsed = min(exchange(comm, rank, buf, n, probe) for _ in range(2))
        done = comm.bcast(elapsed >= target / 4 or probe >= most, root=0)
        if done:
            break
        probe *= 2
    reps = max(10, min(most, int(target / max(elapsed / probe, 1e-8))))
    result: int = comm.bcast(reps, root=0)
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-bytes", type=int, default=1 << 20)
    parser.add_argument("--target-seconds", type=float, default=0.004,
                        help="about how long one timed batch of a size takes")
    parser.add_argument("--batches", type=int, default=15)
    parser.add_argument("--max-repetitions", type=int, default=20000)
    parser.add_argument("--out", help="also write the JSON lines to this file")
    args = parser.parse_args()

    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()
    if comm.Get_size() != 2:
        if rank == 0:
            print(f"pingpong needs exactly 2 ranks, got {comm.Get_size()}", file=sys.stderr)
        return 2

    out = open(args.out, "w") if args.out and rank == 0 else None  # noqa: SIM115
    buf = bytearray(b"\x5a" * max(1, args.max_bytes))
    for n in sizes(args.max_bytes):
        # Warm-up: first touches of buffers and protocol set-up are not measured.
        exchange(comm, rank, buf, n, 5)
        reps = calibrate(comm, rank, buf, n, args.target_seconds, args.max_repetitions)
        best = min(exchange(comm, rank, buf, n, reps) for _ in range(args.batches))
        if rank == 0:
            line = json.dumps({"bytes": n, "repetitions": reps,
                               "half_round_trip_s": best / reps / 2,
                               "batches": args.batches})
            print(line, flush=True)
            if out is not None:
                out.write(line + "\n")
    if out is not None:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
