# Tests: unit tests (Check) in tests/unit/test_*.c, one binary each, linked with
# the format and reporter objects; integration tests are the executables
# tests/integration/test_*; tests/run.sh runs both and prints the total line.

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# The reporter's objects without its main(), so tests can call into it.
REPORTER_LIB_OBJ := $(filter-out $(BUILD)/obj/reporter/main.o,$(REPORTER_OBJ))

$(BUILD)/tests/%: tests/unit/%.c tests/unit/rs_check.h $(FORMAT_OBJ) $(REPORTER_LIB_OBJ)
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -Wno-missing-prototypes -o $@ $< $(FORMAT_OBJ) $(REPORTER_LIB_OBJ) \
	    $(RS_LDFLAGS) -lcheck -lsubunit -lrt $(REPORTER_LIBS)

# Small programs the integration tests run under the agent.
PROG_SRC := $(wildcard tests/programs/*.c)
PROG_BIN := $(PROG_SRC:tests/programs/%.c=$(BUILD)/tests/prog/%)

# The CUDA and NCCL programs read cuda.h and nccl.h as system headers.
$(BUILD)/tests/prog/cuda_paths $(BUILD)/tests/prog/nccl_ops $(BUILD)/tests/prog/graph_modes: RS_CFLAGS += -isystem $(CUDA_HOME)/include
# graph_modes links the driver (the simulator's at run time) and pthreads.
$(BUILD)/tests/prog/graph_modes: RS_LDFLAGS += -L$(BUILD)/sim -lcuda -pthread
$(BUILD)/tests/prog/graph_modes: $(BUILD)/sim/libcuda.so.1

$(BUILD)/tests/prog/%: tests/programs/%.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -o $@ $< $(RS_LDFLAGS)

.PHONY: test-build
test-build: all $(UNIT_BIN) $(PROG_BIN) $(TEST_EXTRA)

test: deps
	$(Q)$(MAKE) --no-print-directory test-build
	$(Q)BUILD=$(BUILD) sh tests/run.sh
include tests/format.mk
include tests/html.mk
include tests/flame.mk

# A shared library for the Python + ctypes sampler test.
$(BUILD)/tests/prog/libspin.so: tests/programs/lib/spin.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -shared -o $@ $< $(RS_LDFLAGS)
test-build: $(BUILD)/tests/prog/libspin.so
include tests/cudart/cudart.mk

# The NVTX program: the toolkit's header-only NVTX v3 (read as system
# headers), which dlopens its injection library.
$(BUILD)/tests/prog/nvtx_ranges $(BUILD)/tests/prog/nvtx_steps: RS_CFLAGS += -isystem $(CUDA_HOME)/include
$(BUILD)/tests/prog/nvtx_ranges $(BUILD)/tests/prog/nvtx_steps: RS_LDFLAGS += -ldl
