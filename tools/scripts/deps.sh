#!/bin/sh
# Installs the Debian packages that are missing, if any. Run as root (or
# through sudo); does nothing when everything is present.
#   tools/scripts/deps.sh        what building ringside and running `make demo` need
#   tools/scripts/deps.sh test   that, and what the tests add: the compilers and
#                        checkers they use, the launchers they run under the
#                        agent (Open MPI, Slurm), Chromium and Node.js for
#                        the page (its scripts: node --check),
#                        PyTorch for a real framework
set -e
BUILD_PKGS="build-essential pkg-config liblz4-dev libunwind-dev libdw-dev libdebuginfod-dev zlib1g-dev libisal-dev
            libyajl-dev libsqlite3-dev"
TEST_PKGS="clang lz4 debuginfod prometheus-node-exporter flatbuffers-compiler libflatbuffers-dev protobuf-compiler
           check fio python3 tar coreutils openmpi-bin libopenmpi-dev slurmctld slurmd slurm-client munge chromium
           nodejs python3-torch"
case "${1:-build}" in
  build) PKGS=$BUILD_PKGS ;;
  test) PKGS="$BUILD_PKGS $TEST_PKGS" ;;
  *) echo "usage: tools/scripts/deps.sh [build|test]" >&2; exit 2 ;;
esac
missing=""
for p in $PKGS; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "deps: installing$missing"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$CUDA_HOME/include/cuda.h" ] || [ ! -f "$CUDA_HOME/include/nccl.h" ]; then
  echo "deps: no CUDA toolkit headers at $CUDA_HOME/include (cuda.h, nccl.h); set CUDA_HOME" >&2
  exit 1
fi
echo "deps: ok"
