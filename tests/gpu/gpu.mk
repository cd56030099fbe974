# `make gpu-check` (docs/testing.md): on a machine with an NVIDIA GPU, tests/gpu/gpu-check.sh
# builds the agent and the reporter, then the real-GPU workload (tests/gpu/workload.cu) with
# nvcc into $(BUILD)/gpu/ and checks it under the agent (tests/gpu/check.py), then runs the
# PyTorch checks (tests/gpu/torch_check.py: Kineto, CUDA graphs, torchrun with NCCL, overheads,
# losses; figures in $(BUILD)/gpu/torch-check.json). Elsewhere it prints "gpu-check: no GPU
# (what is missing)" and the list of what it would check, and exits 0. Knobs: see the
# script's header (NCCL=0|1, NCCL_HOME, NVCC_ARCH, CUDART=static, TORCH=0, TORCH_PYTHON, ...).
# Included by the top Makefile after its own rules (needs BUILD, CUDA_HOME).

NVCC ?= $(CUDA_HOME)/bin/nvcc

gpu-check:
	$(Q)BUILD='$(BUILD)' CUDA_HOME='$(CUDA_HOME)' NVCC='$(NVCC)' MAKE='$(MAKE)' sh tests/gpu/gpu-check.sh
