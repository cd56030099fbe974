# The cudart tests ("the path PyTorch takes"): a logging stand-in driver
# (build/tests/logcuda/libcuda.so.1), the real CUDA runtime's initialisation built with
# nvcc against it, shared and static (build/tests/cudart/rt_init_*; only where nvcc is),
# a control interposer for the tests' own check, and the replay program that reaches the simulator the way the recorded list says.

NVCC ?= $(CUDA_HOME)/bin/nvcc

# -Bsymbolic: the stand-in knows its own functions by their addresses, even where an
# interposer (the agent) defines the same names.
# The driver's entry-point variants, from the toolkit's PFN types: { name, version, suffix }.
$(BUILD)/tests/logcuda/pfn.h: $(CUDA_HOME)/include/cudaTypedefs.h
	$(call say,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)sed -n 's/.*(CUDAAPI \*PFN_\(cu[A-Za-z0-9]*\)_v\([0-9][0-9]*\)\(_pt[sd][sz]\)\{0,1\})(.*/{ "\1", \2, "\3" },/p' \
	    $< | sort -u >$@.tmp && test -s $@.tmp && mv $@.tmp $@

$(BUILD)/tests/logcuda/libcuda.so.1: tests/cudart/logcuda.c $(BUILD)/tests/logcuda/pfn.h
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -isystem $(CUDA_HOME)/include -I$(BUILD)/tests/logcuda -fvisibility=hidden -shared \
	    -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -Wl,-z,defs -o $@ $< $(RS_LDFLAGS) -ldl

$(BUILD)/tests/logcuda/fakehook.so: tests/cudart/fakehook.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -isystem $(CUDA_HOME)/include -fvisibility=hidden -shared \
	    -Wl,-z,defs -o $@ $< $(RS_LDFLAGS) -ldl

$(BUILD)/tests/cudart/replay: tests/cudart/replay.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -isystem $(CUDA_HOME)/include -o $@ $< $(RS_LDFLAGS) -ldl

CUDART_TEST_EXTRA := $(BUILD)/tests/logcuda/libcuda.so.1 $(BUILD)/tests/logcuda/fakehook.so \
                     $(BUILD)/tests/cudart/replay

# PyTorch loads libcudart.so as a shared library; nvcc links the static one by default:
# both are built, and the tests check that they ask the driver the same things.
ifneq ($(wildcard $(NVCC)),)
$(BUILD)/tests/cudart/rt_init_shared: tests/cudart/rt_init.cu
	$(call say,NVCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -cudart shared -o $@ $<

$(BUILD)/tests/cudart/rt_init_static: tests/cudart/rt_init.cu
	$(call say,NVCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(NVCC) -cudart static -o $@ $<

CUDART_TEST_EXTRA += $(BUILD)/tests/cudart/rt_init_shared $(BUILD)/tests/cudart/rt_init_static
endif

# Re-records tests/data/cudart-X.Y-lookups.txt from this machine's toolkit.
.PHONY: cudart-lookups
cudart-lookups: $(CUDART_TEST_EXTRA)
	$(Q)BUILD=$(BUILD) NVCC=$(NVCC) tests/integration/test_cudart_runtime.py --record

TEST_EXTRA += $(CUDART_TEST_EXTRA)
test-build: $(CUDART_TEST_EXTRA)
