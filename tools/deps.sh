#!/bin/sh
# Installs the Debian packages the build and the tests need, if any is missing.
# Run as root (or through sudo); does nothing when everything is present.
set -e
PKGS="build-essential clang pkg-config liblz4-dev lz4 libunwind-dev libdw-dev libdebuginfod-dev debuginfod zlib1g-dev libisal-dev
      libyajl-dev libsqlite3-dev prometheus-node-exporter flatbuffers-compiler libflatbuffers-dev protobuf-compiler check fio python3 tar coreutils
      openmpi-bin libopenmpi-dev slurmctld slurmd slurm-client munge chromium python3-torch"
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
