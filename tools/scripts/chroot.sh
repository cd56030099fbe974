#!/bin/sh
# Makes the chroot of the modern stack the tests in tests/modern run in (make
# chroot): Debian unstable by debootstrap, with Python 3.14, PyTorch 2.x
# (CPU), NumPy, libunwind (the agent's unwinder), g++ and libtorch-dev (torch.compile
# builds C++ with them), into DIR once; a stamp
# file marks it done, so a second run does nothing. Root only (debootstrap).
#   sh tools/scripts/chroot.sh DIR            make DIR unless it is done
#   sh tools/scripts/chroot.sh --refresh DIR  make it anew (make chroot-refresh)
# SUITE and MIRROR choose another suite or mirror; PACKAGES adds packages.
set -e
REFRESH=0
[ "${1:-}" = --refresh ] && REFRESH=1 && shift
DIR=${1:?usage: sh tools/scripts/chroot.sh [--refresh] DIR}
SUITE=${SUITE:-sid}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PKGS="python3,python3-torch,python3-numpy,libunwind8,g++,libtorch-dev${PACKAGES:+,$PACKAGES}"
STAMP="$DIR/.ringside-chroot"
[ "$REFRESH" -eq 0 ] && [ -f "$STAMP" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "chroot: debootstrap needs root" >&2
  exit 1
fi
# Never delete a tree something is still mounted in (a bound /dev or /proc
# would be emptied on the host): the tests bind in a namespace of their own,
# but a user may have entered it by hand.
abs=$(cd "$(dirname "$DIR")" && pwd)/$(basename "$DIR")
for d in "$abs" "$abs.tmp"; do
  if awk -v d="$d" '$5 == d || index($5, d "/") == 1 { found = 1 } END { exit !found }' /proc/self/mountinfo; then
    echo "chroot: something is mounted under $d; unmount it first" >&2
    exit 1
  fi
done
command -v debootstrap >/dev/null || {
  echo "chroot: installing debootstrap"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
}
rm -rf "$abs.tmp"
start=$(date +%s)
echo "chroot: debootstrap $SUITE ($PKGS) into $DIR"
if ! debootstrap --variant=minbase --include="$PKGS" "$SUITE" "$abs.tmp" "$MIRROR" >"$abs.log" 2>&1; then
  tail -n 20 "$abs.log" >&2
  echo "chroot: debootstrap failed; the whole log is $abs.log" >&2
  exit 1
fi
rm -rf "$abs"
mv "$abs.tmp" "$abs"
echo "$SUITE $(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$STAMP"
echo "chroot: $DIR made in $(($(date +%s) - start)) s ($(chroot "$abs" python3 --version))"
