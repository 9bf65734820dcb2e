#!/usr/bin/env bash
# The one test command: `bash tests/run.sh [pytest args...]`.
#
# On a fresh Debian 12 machine (as root, or with passwordless sudo) it installs what the
# suite needs: PostgreSQL server binaries, Node.js + npm, Python >= 3.11 with venv, gcc and
# Python's headers (apt);
# the project and its dev extras into .venv (pip); the third-party OpenID provider in
# tests/oidc and axe-core in tests/browser/axe (npm ci); the testbed's packages (apt) and
# Toxiproxy for its WAN links (go install, Go module proxy). Then: ruff, mypy --strict,
# pytest.
# Steps whose result is already present are skipped, so a developer with everything
# installed needs no root.
#
# The suite starts its own PostgreSQL (tests/pg.py); set GRIDGATE_TEST_PG_URL to use an
# existing server instead.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$(pwd)
VENV="$REPO/.venv"
OIDC_DIR="$REPO/tests/oidc"
POLICY_RC=/usr/sbin/policy-rc.d
STARTED=$SECONDS

say() { printf '==> %s\n' "$*"; }
die() { printf 'tests/run.sh: error: %s\n' "$*" >&2; exit 1; }

# --- cleanup: stop what this script started (by PID) ------------------------------
CREATED_POLICY_RC=0
CHILD_PID=""

stop_child() {
    [[ -n "$CHILD_PID" ]] || return 0
    if kill -0 "$CHILD_PID" 2>/dev/null; then
        # SIGINT lets pytest run its fixture teardown (servers it started stop cleanly).
        kill -INT "$CHILD_PID" 2>/dev/null || true
        for _ in $(seq 1 300); do
            kill -0 "$CHILD_PID" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$CHILD_PID" 2>/dev/null || true
    fi
    wait "$CHILD_PID" 2>/dev/null || true
    CHILD_PID=""
}

cleanup() {
    stop_child
    if [[ $CREATED_POLICY_RC == 1 ]]; then
        as_root rm -f "$POLICY_RC" || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Run "$@" in the background and wait, so a signal to this script reaches the trap at
# once (bash defers traps while a foreground child runs). The subshell un-ignores
# SIGINT, which bash ignores in background children of a non-interactive shell.
run_child() {
    ( trap - INT QUIT; exec "$@" ) <&0 &
    CHILD_PID=$!
    local rc=0
    wait "$CHILD_PID" || rc=$?
    CHILD_PID=""
    return "$rc"
}

as_root() {
    if [[ $EUID -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        die "root is needed to run: $* (install the missing packages, or rerun as root)"
    fi
}

sha() { sha256sum "$@" | cut -d' ' -f1; }

# --- what is missing ----------------------------------------------------------------
pg_bindir() {
    local dir candidates=()
    if [[ -n "${GRIDGATE_PG_BINDIR:-}" ]]; then candidates+=("$GRIDGATE_PG_BINDIR"); fi
    # libpq-dev ships pg_config without the server, so look for the binaries themselves.
    if command -v pg_config >/dev/null 2>&1; then
        candidates+=("$(pg_config --bindir 2>/dev/null || true)")
    fi
    while IFS= read -r dir; do candidates+=("$dir"); done < <(
        find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null \
            | sort -t/ -k5,5nr
    )
    if command -v postgres >/dev/null 2>&1; then
        candidates+=("$(dirname "$(readlink -f "$(command -v postgres)")")")
    fi
    for dir in "${candidates[@]}"; do
        if [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/postgres" ]]; then
            printf '%s\n' "$dir"
            return 0
        fi
    done
    return 1
}

# The distribution's interpreter first: Debian's is built with PGO and LTO, and the suite
# took 1,673 s of pytest under it against 2,037 s under a pyenv build of 3.11.7 (same
# tests, same machine; docs/design/predictors.md, "Speed of the walk").
find_python() {
    local py
    for py in /usr/bin/python3 python3.13 python3.12 python3.11 python3; do
        if command -v "$py" >/dev/null 2>&1 \
            && "$py" -c 'import sys, venv, ensurepip; sys.exit(sys.version_info < (3, 11))' \
                >/dev/null 2>&1; then
            command -v "$py"
            return 0
        fi
    done
    return 1
}

venv_ok() { [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import sys' 2>/dev/null; }

needs_node() { [[ -f "$OIDC_DIR/package.json" ]]; }

# --- system packages (apt) ----------------------------------------------------------
apt_packages=()
pg_bindir >/dev/null || apt_packages+=(postgresql)
if needs_node; then
    command -v node >/dev/null 2>&1 || apt_packages+=(nodejs)
    command -v npm >/dev/null 2>&1 || apt_packages+=(npm)
fi
# Real sshd (and the OpenSSH client as a baseline) for the SSH transport tests.
[[ -x /usr/sbin/sshd ]] || apt_packages+=(openssh-server)
command -v ssh >/dev/null 2>&1 || apt_packages+=(openssh-client)
# Each local job runs in its own bubblewrap sandbox; with GRIDGATE_LOCAL_NETWORK=outbound
# slirp4netns gives it a way out, tested on a host of its own made with ip (iproute2).
command -v bwrap >/dev/null 2>&1 || apt_packages+=(bubblewrap)
command -v slirp4netns >/dev/null 2>&1 || apt_packages+=(slirp4netns)
command -v ip >/dev/null 2>&1 || apt_packages+=(iproute2)
# `gridgate image` builds SIF images with mksquashfs and siftool; the live container tests
# run them with Charliecloud's ch-run (SquashFUSE built in) and squashfuse.
command -v mksquashfs >/dev/null 2>&1 || apt_packages+=(squashfs-tools)
command -v siftool >/dev/null 2>&1 || apt_packages+=(siftool)
command -v ch-run >/dev/null 2>&1 || apt_packages+=(charliecloud-runtime)
command -v squashfuse >/dev/null 2>&1 || apt_packages+=(squashfuse)
# The gateway pulls registry images for sites that cannot (docker://, oras://): tests push
# images into a real OCI registry, Debian's build of the CNCF distribution registry v2,
# started per session on a loopback port (tests/registry/fixture.py), never as a service.
[[ -x /usr/bin/docker-registry ]] || apt_packages+=(docker-registry)
# The device-login page is tested in a real (headless) browser.
[[ -x /usr/bin/chromium ]] || apt_packages+=(chromium)
fc-list 2>/dev/null | grep -q . || apt_packages+=(fonts-dejavu-core)
if ! venv_ok && ! find_python >/dev/null; then
    apt_packages+=(python3 python3-venv)
# The workflow engine's venv is made from the system's Python (below).
elif ! /usr/bin/python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    apt_packages+=(python3 python3-venv)
fi

# The suite compiles the engine with mypyc as `GRIDGATE_COMPILE=1 pip install .` does
# (tests/scheduling/test_compiled_engine.py): a C compiler and the interpreter's headers.
command -v gcc >/dev/null 2>&1 || apt_packages+=(gcc)
[[ -e /usr/include/stdio.h ]] || apt_packages+=(libc6-dev)
headers_of() { "$1" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; }
if venv_ok; then
    headers_of "$VENV/bin/python" || apt_packages+=(python3-dev)
elif PYTHON=$(find_python); then
    headers_of "$PYTHON" || apt_packages+=(python3-dev)
else
    apt_packages+=(python3-dev)
fi

if ((${#apt_packages[@]})); then
    command -v apt-get >/dev/null 2>&1 || die "missing ${apt_packages[*]} and no apt-get"
    say "installing ${apt_packages[*]} (apt)"
    if [[ ! -e $POLICY_RC ]]; then
        # Packages must not start daemons: the suite starts its own PostgreSQL.
        printf '#!/bin/sh\nexit 101\n' | as_root tee "$POLICY_RC" >/dev/null
        as_root chmod 0755 "$POLICY_RC"
        CREATED_POLICY_RC=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
    if [[ $CREATED_POLICY_RC == 1 ]]; then
        as_root rm -f "$POLICY_RC"
        CREATED_POLICY_RC=0
    fi
fi

PG_BINDIR=$(pg_bindir) || die "PostgreSQL server binaries not found even after installing"
export GRIDGATE_PG_BINDIR="$PG_BINDIR"
say "PostgreSQL: $("$PG_BINDIR/postgres" --version)"

# --- Python: venv + project with dev extras -----------------------------------------
if ! venv_ok; then
    PYTHON=$(find_python) || die "no python3 >= 3.11 with the venv module"
    say "creating .venv ($("$PYTHON" --version))"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
fi

deps_stamp="$VENV/.gridgate-deps"
deps_key="$(sha "$REPO/pyproject.toml" "$REPO/testbed/pyproject.toml" | tr '\n' ' ')"
deps_key+=$("$VENV/bin/python" -c 'import sys; print(sys.version)')
if [[ ! -f $deps_stamp || "$(cat "$deps_stamp")" != "$deps_key" ]] \
    || ! "$VENV/bin/python" -c 'import importlib.metadata as m
m.version("gridgate"); m.version("gridgate-testbed")' 2>/dev/null; then
    # The testbed is a distribution of its own (testbed/pyproject.toml), not in the wheel.
    say "installing gridgate[dev] and the testbed tooling into .venv (pip)"
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$VENV/bin/pip" install -q -e "$REPO[dev]" -e "$REPO/testbed"
    printf '%s' "$deps_key" >"$deps_stamp"
fi

# --- the workflow engine the GA4GH TES test drives -------------------------------------
# Snakemake with its TES executor is a client of the gateway, not a dependency: a venv of
# its own (its pins need not agree with the project's), whose packages and the wheels of
# its `fs` storage plugin also make the image its tasks run in (tests/api/tes/snakemake_image.py).
# Outside the clone, made from the system's Python: the test runs the engine as a site's
# account, which may not enter a private clone or a per-user Python.
SMK_VENV=/opt/gridgate-tests/snakemake
SMK_PINS=(snakemake==9.27.1 snakemake-executor-plugin-tes==0.1.3 snakemake-storage-plugin-fs==1.1.3 six)
if [[ ! -f $SMK_VENV/.gridgate-pins || "$(cat "$SMK_VENV/.gridgate-pins")" != "${SMK_PINS[*]}" ]]; then
    say "installing Snakemake and its TES executor into $SMK_VENV (pip)"
    as_root rm -rf "$SMK_VENV"
    as_root /usr/bin/python3 -m venv "$SMK_VENV"
    as_root env PIP_DISABLE_PIP_VERSION_CHECK=1 "$SMK_VENV/bin/pip" install -q "${SMK_PINS[@]}"
    # The wheels the image's offline pip installs the storage plugin from, at the versions
    # the venv has (a newer `packaging` would shadow the one Snakemake needs).
    "$SMK_VENV/bin/pip" freeze | as_root tee "$SMK_VENV/constraints.txt" >/dev/null
    as_root env PIP_DISABLE_PIP_VERSION_CHECK=1 "$SMK_VENV/bin/pip" download -q \
        -d "$SMK_VENV/wheels" -c "$SMK_VENV/constraints.txt" snakemake-storage-plugin-fs==1.1.3
    printf '%s' "${SMK_PINS[*]}" | as_root tee "$SMK_VENV/.gridgate-pins" >/dev/null
fi

# --- the multi-site testbed's packages (Slurm + slurmdbd, Grid Engine, MPI, sshd) ----
# --- and Toxiproxy, the delay of its WAN links (built with Go, pinned) ----------------
if ! "$VENV/bin/python" -m testbed.install --check >/dev/null; then
    say "installing the testbed's packages (apt) and Toxiproxy (go install)"
    as_root "$VENV/bin/python" -m testbed.install
fi

# --- Node: the third-party OpenID provider ------------------------------------------
# oidc-provider 9 needs Node >= 22 (URL.parse; it warns below 22), while Debian 12 ships
# Node 18. When the system node is older, fetch a pinned Node from the npm registry
# (the node-linux-<arch> packages carry the official binaries) into .tmp/ and put it
# first on PATH for npm and for the tests.
NODE_PIN=22.23.3
if needs_node; then
    node_min=${GRIDGATE_NODE_MIN_MAJOR:-$(
        cd "$OIDC_DIR" && node -p '/(\d+)/.exec((require("./package.json").engines || {}).node || "22")[1]'
    )}
    node_major=$(node -p 'process.versions.node.split(".")[0]')
    if ((node_major < node_min)); then
        case "$(uname -m)" in
            x86_64) node_arch=x64 ;;
            aarch64 | arm64) node_arch=arm64 ;;
            *) die "node $(node --version) is older than $node_min and $(uname -m) has no fallback" ;;
        esac
        local_node="$REPO/.tmp/node-$NODE_PIN"
        if [[ ! -x "$local_node/bin/node" ]]; then
            say "fetching node $NODE_PIN (system node $(node --version) < $node_min; npm registry)"
            node_tmp=$(mktemp -d)
            (cd "$node_tmp" && npm pack "node-linux-$node_arch@$NODE_PIN" --silent >/dev/null)
            tar -xzf "$node_tmp"/node-linux-*.tgz -C "$node_tmp"
            mkdir -p "$REPO/.tmp"
            rm -rf "$local_node"
            mv "$node_tmp/package" "$local_node"
            # Only bin/node is used; headers and docs are half of the unpacked size.
            rm -rf "$local_node/include" "$local_node/share"
            rm -rf "$node_tmp"
        fi
        export PATH="$local_node/bin:$PATH"
    fi
    say "Node.js: $(node --version)"
fi

# The node modules of the tests: the OpenID provider, and axe-core (run in Chromium by
# the portal's accessibility test).
for node_dir in "$OIDC_DIR" "$REPO/tests/browser/axe"; do
    if [[ -f "$node_dir/package-lock.json" ]]; then
        npm_stamp="$node_dir/node_modules/.gridgate-lock"
        npm_key="$(sha "$node_dir/package-lock.json") $(node --version)"
        if [[ ! -f $npm_stamp || "$(cat "$npm_stamp")" != "$npm_key" ]]; then
            say "installing ${node_dir#"$REPO"/} node modules (npm ci, node $(node --version))"
            (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
            printf '%s' "$npm_key" >"$npm_stamp"
        fi
    else
        die "${node_dir#"$REPO"/} has no package-lock.json"
    fi
done

# --- lint, types, tests -------------------------------------------------------------
say "ruff check"
"$VENV/bin/ruff" check --quiet .

say "mypy --strict"
"$VENV/bin/mypy"

# The import contracts in pyproject.toml ([tool.importlinter]).
say "lint-imports"
"$VENV/bin/lint-imports"

# The documentation site: a broken link, a missing anchor or a page outside the nav fails it.
say "mkdocs build --strict"
DOCS_SITE=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --quiet --site-dir "$DOCS_SITE"
rm -rf "$DOCS_SITE"

# One worker process per core and one more (GRIDGATE_TEST_WORKERS; 0 runs in this
# process): the live testbed's tests keep to one of them (tests/conftest.py groups them)
# and mostly wait on real schedulers; the others keep the cores busy meanwhile.
WORKERS=${GRIDGATE_TEST_WORKERS:-$(($(nproc) + 1))}
say "pytest ($WORKERS workers)"
rc=0
# --durations: the slowest tests in every log, so suite time is watched, not guessed.
run_child "$VENV/bin/pytest" -q -n "$WORKERS" --dist loadgroup --durations=25 "$@" || rc=$?
if ((rc == 5)); then
    die "pytest collected no tests (exit 5)"
fi
if ((rc != 0)); then
    say "FAILED (pytest exit $rc) after $((SECONDS - STARTED))s"
    exit "$rc"
fi
say "all passed in $((SECONDS - STARTED))s"
