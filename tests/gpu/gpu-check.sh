#!/bin/sh
# `make gpu-check` (docs/testing.md): the checks that need a real NVIDIA GPU, in one run
# that ends well inside 8 minutes. Two parts, each timed:
#   workload  tests/gpu/workload.cu, built with nvcc into $BUILD/gpu/ (with NCCL where it
#             is found), run under the agent; tests/gpu/check.py holds the trace and the
#             report against the workload's own figures (launches, times, geometry).
#   torch     tests/gpu/torch_check.py: PyTorch jobs under the agent against torch.profiler
#             (Kineto), CUDA graphs, torchrun with NCCL, overheads, losses; its figures
#             also go to $BUILD/gpu/torch-check.json.
# The agent and the reporter are built first. Where there is no GPU (no device file, no
# working `nvidia-smi -L`) it prints "gpu-check: no GPU (what is missing)", then the list
# of what it would have checked, and exits 0. A GPU without nvcc leaves the workload part
# out (a skip line), without PyTorch the torch part fails (TORCH=0 leaves it out). Exit
# status: 0 passed or no GPU, 1 a check or a build failed.
#
# Knobs (environment; make passes BUILD, CUDA_HOME and NVCC):
#   BUILD        build folder (default build)
#   CUDA_HOME    the toolkit (default /usr/local/cuda); NVCC (default $CUDA_HOME/bin/nvcc)
#   NVIDIA_SMI   nvidia-smi to ask (default: the one on PATH)
#   GPU_DEVICES  the device files that mean a GPU is there (default /dev/nvidia[0-9]*)
#   NCCL         auto (default), 0 (build without), 1 (fail without);
#                NCCL_HOME where nccl.h and libnccl are (include/, lib/ or lib64/); else
#                the toolkit, /usr, /usr/local, then TORCH_PYTHON's nvidia.nccl package
#   NVCC_ARCH    nvcc's architecture flags (default -arch=native, else sm_80 and sm_90)
#   CUDART       shared (default: the runtime as PyTorch loads it) or static (nvcc's default)
#   BUILD_ONLY=1 build $BUILD/gpu/workload and stop (no GPU needed): for a GPU machine
#                without the toolkit, with CUDART=static (and NCCL=0 unless it has NCCL)
#   WORKLOAD     a workload built that way: run it, build none (no nvcc needed)
#   TORCH        1 (default): the torch part; 0: leave it out
#   TORCH_PYTHON the interpreter with PyTorch (default python3); TORCH_PARTS: its parts
#                (default all: see torch_check.py --list); TORCH_BUDGET: its seconds (330)
#   PREBUILT=1   build neither the agent nor the reporter: use those in $BUILD, built on
#                another machine of the same processor (a GPU machine without the
#                build's packages); the reporter may be a script that sets its libraries
#   JOBS         make's jobs for the agent and the reporter (default: the CPUs)
#   MAKE, PYTHON the make and python3 to run
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NVCC=${NVCC:-$CUDA_HOME/bin/nvcc}
NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
GPU_DEVICES=${GPU_DEVICES:-/dev/nvidia[0-9]*}
NCCL=${NCCL:-auto}
NCCL_HOME=${NCCL_HOME:-}
CUDART=${CUDART:-shared}
BUILD_ONLY=${BUILD_ONLY:-}
PREBUILT=${PREBUILT:-}
WORKLOAD=${WORKLOAD:-}
MAKE=${MAKE:-make}
PYTHON=${PYTHON:-python3}
TORCH=${TORCH:-1}
TORCH_PYTHON=${TORCH_PYTHON:-$PYTHON}
TORCH_PARTS=${TORCH_PARTS:-}
TORCH_BUDGET=${TORCH_BUDGET:-330}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
OUT=$BUILD/gpu

# What a GPU machine would be checked for.
plan() {
  echo "gpu-check: on a machine with an NVIDIA GPU, it checks:"
  echo "  - workload: the CUDA workload of known times and geometry (tests/gpu/workload.cu, with a" \
       "one-rank NCCL all-reduce): every launch, copy and the all-reduce recorded, GPU times within 5%" \
       "or 20 us of its cudaEvents, each kernel's blocks, waves, SM coverage and occupancy, SM activity"
  "$PYTHON" tests/gpu/torch_check.py --list || echo "  - (tests/gpu/torch_check.py --list failed)"
}

no_gpu() {
  echo "gpu-check: no GPU ($1); nothing was checked"
  plan
  exit 0
}

# Seconds since the epoch, and a part's duration line.
now() { date +%s; }
took() { echo "gpu-check: the $1 part took $(($(now) - $2)) s"; }

fail() {
  echo "gpu-check: FAILED: $1"
  exit 1
}

# What is there: device files and a driver that answers, then a compiler.
detect_gpu() {
  dev=
  # The pattern is meant to be expanded here.
  # shellcheck disable=SC2086
  for f in $GPU_DEVICES; do
    if [ -e "$f" ]; then dev=$f; break; fi
  done
  [ -n "$dev" ] || no_gpu "no device file $GPU_DEVICES"
  if ! command -v "$NVIDIA_SMI" >/dev/null 2>&1; then
    no_gpu "$dev is there but $NVIDIA_SMI is not found: no NVIDIA driver"
  fi
  smi=$("$NVIDIA_SMI" -L 2>&1)
  rc=$?
  gpu=$(printf '%s\n' "$smi" | sed -n '1p')
  [ "$rc" -eq 0 ] || no_gpu "$NVIDIA_SMI -L failed with status $rc: $gpu"
  ngpus=$(printf '%s\n' "$smi" | grep -c '^GPU [0-9]')
  [ "$ngpus" -gt 0 ] || no_gpu "$NVIDIA_SMI -L lists no GPU: $gpu"
  driver=$("$NVIDIA_SMI" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | sed -n '1p')
}

# NCCL: nccl.h and the library, from NCCL_HOME, the toolkit, or the system.
nccl_inc=; nccl_lib=
find_nccl() {
  multiarch=$(cc -print-multiarch 2>/dev/null)
  # PyTorch's wheels bring NCCL as the package nvidia.nccl (include/, lib/)
  pip_nccl=$("$TORCH_PYTHON" -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
  for d in ${NCCL_HOME:+"$NCCL_HOME"} "$CUDA_HOME" /usr /usr/local ${pip_nccl:+"$pip_nccl"}; do
    [ -f "$d/include/nccl.h" ] || continue
    for l in "$d/lib64" "$d/lib" ${multiarch:+"$d/lib/$multiarch"}; do
      for so in "$l/libnccl.so" "$l/libnccl.so.2"; do
        if [ -f "$so" ]; then nccl_inc=$d/include; nccl_lib=$so; return 0; fi
      done
    done
  done
  return 1
}

# build ARCH_FLAGS...: the workload, with NCCL when nccl_state is yes; nvcc's output
# is shown and kept in $OUT/nvcc.log. The runtime's folder (and NCCL's) goes into
# the program's run path, so that it runs without LD_LIBRARY_PATH.
build() {
  with=
  [ "$nccl_state" = yes ] && with=" with NCCL"
  echo "  NVCC   $OUT/workload ($*$with, cudart $CUDART)"
  rpath=
  for l in "$CUDA_HOME/lib64" "$CUDA_HOME/lib"; do
    [ -d "$l" ] && rpath=${rpath:+$rpath:}$l
  done
  set -- -O2 -std=c++17 -Xcompiler -Wall,-Wextra -cudart "$CUDART" "$@" -o "$OUT/workload" \
         tests/gpu/workload.cu
  if [ "$nccl_state" = yes ]; then
    # through -Xlinker: nvcc takes no file named *.so.2 (pip's nvidia-nccl has no libnccl.so)
    set -- "$@" -DHAVE_NCCL -I"$nccl_inc" -Xlinker "$nccl_lib"
    rpath=${rpath:+$rpath:}$(dirname "$nccl_lib")
  fi
  "$NVCC" "$@" ${rpath:+-Xlinker -rpath,"$rpath"} >"$OUT/nvcc.log" 2>&1
  rc=$?
  cat "$OUT/nvcc.log"
  [ "$rc" -eq 0 ] && ! grep -q 'Cannot find valid GPU' "$OUT/nvcc.log"
}

# Architectures: the GPU's own, or Ampere and Hopper code plus Hopper PTX for newer ones.
build_arch() {
  if [ -n "${NVCC_ARCH:-}" ]; then
    # NVCC_ARCH is a list of flags.
    # shellcheck disable=SC2086
    build $NVCC_ARCH
    return
  fi
  build -arch=native && return 0
  echo "gpu-check: nvcc -arch=native did not build for this GPU: sm_80 and sm_90 instead"
  build -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
        -gencode arch=compute_90,code=compute_90
}

build_workload() {
  echo "gpu-check: nvcc $("$NVCC" --version | sed -n 's/^Cuda compilation tools, //p')"
  mkdir -p "$OUT" || fail "cannot create $OUT"
  nccl_state=no
  if [ "$NCCL" != 0 ]; then
    if find_nccl; then
      nccl_state=yes
      echo "gpu-check: NCCL: $nccl_inc/nccl.h, $nccl_lib"
    elif [ "$NCCL" = 1 ]; then
      fail "NCCL=1, but no nccl.h with libnccl.so in NCCL_HOME ($NCCL_HOME), $CUDA_HOME, /usr, /usr/local or the nvidia.nccl package"
    else
      echo "gpu-check: NCCL not found (NCCL_HOME, $CUDA_HOME, /usr, /usr/local, nvidia.nccl): no all-reduce"
    fi
  fi
  rm -f "$OUT/workload"
  build_arch && return 0
  [ "$nccl_state" = yes ] || fail "nvcc could not build tests/gpu/workload.cu (above)"
  # Without NCCL, so that everything else is still checked; check.py counts this as a failure.
  echo "gpu-check: the workload did not build with NCCL ($nccl_lib): once more without it"
  nccl_state=failed
  build_arch || fail "nvcc could not build tests/gpu/workload.cu (above)"
}

have_nvcc() {
  command -v "$NVCC" >/dev/null 2>&1
}

if [ -n "$BUILD_ONLY" ]; then
  have_nvcc || fail "BUILD_ONLY: nvcc not found at $NVCC (set CUDA_HOME or NVCC)"
  build_workload
  echo "gpu-check: built $OUT/workload; run it with WORKLOAD=$OUT/workload make gpu-check"
  exit 0
fi

detect_gpu
t_all=$(now)
echo "gpu-check: $gpu, driver ${driver:-?}"
failed=
t=$(now)
if [ -n "$PREBUILT" ]; then
  # A GPU machine without the build's Debian packages: the agent and the
  # reporter were built elsewhere into $BUILD (same processor, glibc no newer).
  for f in "$BUILD/libagent.so" "$BUILD/ringside"; do
    [ -f "$f" ] || fail "PREBUILT=1, but $f is not there: build it elsewhere (make BUILD=$BUILD all)"
  done
  echo "gpu-check: the agent and the reporter built before: $BUILD/libagent.so, $BUILD/ringside"
  "$BUILD/ringside" --help >/dev/null 2>&1 || fail "PREBUILT=1: $BUILD/ringside does not run here (its libraries?)"
else
  echo "gpu-check: building the agent and the reporter ($MAKE -j$JOBS BUILD=$BUILD)"
  $MAKE --no-print-directory -j"$JOBS" BUILD="$BUILD" all || fail "building the agent and the reporter failed"
  took build "$t"
fi

# The workload part: tests/gpu/check.py on the workload (nvcc builds it, or WORKLOAD).
t=$(now)
nccl_state=
if [ -n "$WORKLOAD" ]; then
  [ -x "$WORKLOAD" ] || fail "WORKLOAD=$WORKLOAD is not an executable file"
  echo "gpu-check: the workload built before: $WORKLOAD"
elif have_nvcc; then
  build_workload
  WORKLOAD=$OUT/workload
fi
if [ -z "$WORKLOAD" ]; then
  echo "skip - the workload part: nvcc not found at $NVCC (set CUDA_HOME or NVCC, or build it" \
       "elsewhere with BUILD_ONLY=1 and pass WORKLOAD)"
else
  if [ "$nccl_state" = failed ]; then set -- --nccl-build-failed; else set --; fi
  timeout 150 "$PYTHON" tests/gpu/check.py --build "$BUILD" --workload "$WORKLOAD" --run "$OUT/run" "$@" \
    || { failed="$failed workload"; echo "gpu-check: the workload part FAILED; its files are in $OUT/run"; }
  took workload "$t"
fi

# The torch part.
t=$(now)
if [ "$TORCH" = 0 ]; then
  echo "skip - the torch part: TORCH=0"
else
  # torch_check.py keeps to its budget; timeout is the backstop
  timeout $((TORCH_BUDGET + 60)) "$TORCH_PYTHON" tests/gpu/torch_check.py --build "$BUILD" --out "$OUT/torch" \
    --budget "$TORCH_BUDGET" --json "$OUT/torch-check.json" ${TORCH_PARTS:+--parts "$TORCH_PARTS"} \
    || { failed="$failed torch"; echo "gpu-check: the torch part FAILED; its files are in $OUT/torch"; }
  took torch "$t"
fi

echo "gpu-check: $(($(now) - t_all)) s in all"
if [ -z "$WORKLOAD" ] && [ "$TORCH" = 0 ]; then
  echo "gpu-check: both parts left out ($gpu); nothing was checked"
  exit 0
fi
if [ -z "$failed" ]; then
  echo "gpu-check: passed ($gpu)"
  exit 0
fi
echo "gpu-check: FAILED:$failed ($gpu)"
exit 1
