# `make gpu-check` (issue 20): on a machine with an NVIDIA GPU and the CUDA toolkit,
# tests/gpu/gpu-check.sh builds the real-GPU workload (tests/gpu/workload.cu) with nvcc
# into $(BUILD)/gpu/, and the agent and reporter if needed, runs it under the agent and
# checks the trace and the report against the workload's own figures (tests/gpu/check.py).
# Elsewhere it prints "gpu-check: no GPU (what is missing)" and exits 0. Knobs: see the
# script's header (NCCL=0|1, NCCL_HOME, NVCC_ARCH, CUDART=static, ...).
# Included by the top Makefile after its own rules (needs BUILD, CUDA_HOME).

NVCC ?= $(CUDA_HOME)/bin/nvcc

gpu-check:
	$(Q)BUILD='$(BUILD)' CUDA_HOME='$(CUDA_HOME)' NVCC='$(NVCC)' MAKE='$(MAKE)' sh tests/gpu/gpu-check.sh
