#!/usr/bin/env bash
# Build pingpong.sif: the seed MPI ping-pong (examples/pingpong/pingpong.c) with the MPI
# it was compiled against, in a SIF image `gridgate image build` makes (no root needed).
#
#   bash examples/container-pingpong/build-image.sh [OUT.sif]        # MPICH (default)
#   MPICC=mpicc.openmpi bash examples/container-pingpong/build-image.sh openmpi.sif
#
# The root file system is this host's: the program and the libraries `ldd` names (the
# MPI library, libc, the loader) at the paths the dynamic loader looks in, plus the
# transport modules UCX loads at run time (MPICH's ch4:ucx device on Debian). So the image
# carries its own MPI (`gridgate image inspect` names it from the library names), and in
# `mpi: hybrid` mode a site whose MPI is of the same ABI family (MPICH ABI: MPICH, Intel
# MPI, MVAPICH, Cray MPICH) starts one container per rank with its own launcher.
# Needs: the MPI's compiler wrapper (Debian: libmpich-dev), squashfs-tools and siftool.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="$(realpath -m "${1:-pingpong.sif}")"
mpicc="${MPICC:-mpicc.mpich}"
gridgate="${GRIDGATE:-gridgate}"

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
root="$work/rootfs"
mkdir -p "$root"

"$mpicc" -O2 -std=c99 -o "$work/pingpong" "$here/../pingpong/pingpong.c"

# Copy FILE to the same path inside the image. A library's soname link (libmpi.so.40)
# stays a link to the real file beside it (libmpi.so.40.30.4), as a distribution lays
# them out: the full name tells which release it is (`gridgate image inspect` reads it).
put() {
    local dir real
    dir="$root$(dirname "$1")"
    real="$(realpath "$1")"
    mkdir -p "$dir"
    cp "$real" "$dir/$(basename "$real")"
    if [ "$(basename "$real")" != "$(basename "$1")" ]; then
        ln -sfn "$(basename "$real")" "$root$1"
    fi
}
libraries() {  # the absolute paths ldd resolves for each argument
    ldd "$@" 2>/dev/null | grep -o '/[^ ]*' | sort -u
}

modules=()
for lib in $(libraries "$work/pingpong"); do
    put "$lib"
    case "$lib" in
    */libucs.so.*)
        # UCX finds its transport modules in <libdir>/ucx; cma (cross-memory attach) is
        # the one the ranks of one node use once ch-run joins them in one container.
        for module in "$(dirname "$lib")"/ucx/libuct_cma.so.0; do
            [ -e "$module" ] && modules+=("$module")
        done ;;
    esac
done
if [ ${#modules[@]} -gt 0 ]; then
    for file in "${modules[@]}" $(libraries "${modules[@]}"); do
        put "$file"
    done
fi

cat > "$work/image.yaml" <<YAML
from: rootfs/
files:
  pingpong: /opt/pingpong/bin/pingpong
YAML
"$gridgate" image build "$work/image.yaml" -o "$out" --force
"$gridgate" image inspect "$out"
