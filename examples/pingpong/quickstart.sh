#!/usr/bin/env bash
# gridgate quick start, in one command (no root needed):
#
#   bash examples/pingpong/quickstart.sh
#
# 1. creates .venv (if missing) and installs gridgate with MPICH + mpi4py from PyPI;
# 2. starts a throwaway gateway (SQLite, built-in token issuer, local site) on a free
#    port, with its data in a temporary directory;
# 3. creates an automation client and logs in with it (client credentials);
# 4. submits the MPI ping-pong of the seed papers (2 ranks, 0 B to 1 MiB) through the
#    REST API (uploading its program) and waits for it;
# 5. prints a latency/bandwidth table and the fitted two-regime model, and how to put
#    gridgate on your PATH;
# 6. stops the gateway and removes the temporary directory, whatever happened.
#
# Your own gridgate login and data are not touched (GRIDGATE_CONFIG_DIR and
# GRIDGATE_DATA_DIR point into the temporary directory).
set -euo pipefail

started=$SECONDS
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${GRIDGATE_VENV:-$root/.venv}"

say() { printf '\n==> %s\n' "$*" >&2; }
die() { printf 'quickstart: %s\n' "$*" >&2; exit 1; }

# --- 1. install -----------------------------------------------------------------------
find_python() {
    local candidate
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            command -v "$candidate"
            return 0
        fi
    done
    return 1
}

if [ ! -x "$venv/bin/python" ]; then
    python="$(find_python)" || die "gridgate needs Python 3.11 or newer (python3.11 or python3 on PATH)"
    say "Creating $venv with $("$python" --version 2>&1)"
    "$python" -m venv "$venv"
fi
py="$venv/bin/python"
# (Re)install when the venv is new or pyproject.toml changed since the last install.
stamp="$venv/.gridgate-quickstart"
wanted="$("$py" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$root/pyproject.toml")"
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ] || [ ! -x "$venv/bin/gridgate" ]; then
    say "Installing gridgate with MPICH and mpi4py into $venv (pip; a minute or two the first time)"
    if ! { "$py" -m pip install --quiet --disable-pip-version-check --upgrade pip &&
        "$py" -m pip install --quiet --disable-pip-version-check -e "$root[mpi]"; } >"$venv/.quickstart-pip.log" 2>&1; then
        tail -n 30 "$venv/.quickstart-pip.log" >&2
        die "pip install failed (full log: $venv/.quickstart-pip.log)"
    fi
    echo "$wanted" >"$stamp"
fi
gridgate="$venv/bin/gridgate"

# --- 2. start a throwaway gateway -----------------------------------------------------
work="$(mktemp -d "${TMPDIR:-/tmp}/gridgate-quickstart.XXXXXX")"
gateway_pid=""
cleanup() {
    local status=$?
    # Finish cleaning up even if the terminal or a pipe reading our output is gone.
    trap '' INT TERM PIPE
    if [ -n "$gateway_pid" ] && kill -0 "$gateway_pid" 2>/dev/null; then
        say "Stopping the gateway (pid $gateway_pid)" 2>/dev/null || true
        kill -TERM "$gateway_pid" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$gateway_pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$gateway_pid" 2>/dev/null || true
    fi
    # uvicorn re-raises SIGTERM after its graceful shutdown: 143 here is a clean stop.
    if [ -n "$gateway_pid" ]; then wait "$gateway_pid" 2>/dev/null || true; fi
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

port="$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
export GRIDGATE_DATA_DIR="$work/data"
export GRIDGATE_CONFIG_DIR="$work/config"
export GRIDGATE_HOST=127.0.0.1
export GRIDGATE_PORT="$port"
export GRIDGATE_PUBLIC_URL="http://127.0.0.1:$port"
export GRIDGATE_URL="$GRIDGATE_PUBLIC_URL"

say "Starting the gateway on $GRIDGATE_URL (data in $work)"
"$gridgate" serve --log-level warning >"$work/gateway.log" 2>&1 &
gateway_pid=$!
for _ in $(seq 1 240); do
    if "$gridgate" health >/dev/null 2>&1; then break; fi
    kill -0 "$gateway_pid" 2>/dev/null || { cat "$work/gateway.log" >&2; die "the gateway exited"; }
    sleep 0.25
done
"$gridgate" health || { cat "$work/gateway.log" >&2; die "the gateway did not become healthy"; }

# --- 3. log in --------------------------------------------------------------------------
say "Creating an automation client and logging in with it (OAuth client credentials)"
"$gridgate" admin client create quickstart --json >"$work/client.json"
(umask 077 && "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["client_secret"])' \
    "$work/client.json" >"$work/client-secret")
client_id="$("$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["client_id"])' "$work/client.json")"
"$gridgate" login --client-id "$client_id" --client-secret-file "$work/client-secret"
"$gridgate" sites

# --- 4. submit the ping-pong ------------------------------------------------------------
say "Submitting the MPI ping-pong (2 ranks, 0 B to 1 MiB) through the REST API"
# The job runs sandboxed in a fresh directory of its own, which sees nothing of this
# checkout: `gridgate submit` uploads pingpong.py (the spec's input names the file next
# to it) and the job finds it there. It runs with this venv's Python (which has mpi4py).
# --exe replaces the spec's args too, so they are given again in full: with `--out
# results.jsonl` the program writes the file the spec's `outputs` collects.
set +e
job="$("$gridgate" submit --file "$here/job.yaml" --exe "$py" --quiet --wait \
    -- pingpong.py --out results.jsonl)"
status=$?
set -e
if [ "$status" -ne 0 ]; then
    if [ -n "$job" ]; then
        "$gridgate" show "$job" >&2 || true
        echo "--- stderr of job $job:" >&2
        "$gridgate" logs --stderr "$job" >&2 || true
    fi
    echo "--- gateway log:" >&2
    tail -n 40 "$work/gateway.log" >&2
    die "the ping-pong job did not complete (exit $status)"
fi

# --- 5. results -------------------------------------------------------------------------
"$gridgate" logs "$job" >"$work/stdout.txt"
say "Ping-pong results (job $job)"
"$py" "$here/report.py" "$work/stdout.txt"
say "Done in $((SECONDS - started)) s"
cat >&2 <<EOF

gridgate is installed in $venv/bin. To put it on your PATH:
    export PATH="$venv/bin:\$PATH"       (add it to ~/.bashrc to keep it)
or install it for your user with pipx (see docs/getting-started/install.md):
    pipx install '$root[mpi]'
EOF
