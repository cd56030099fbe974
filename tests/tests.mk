# Tests: unit tests (Check) in tests/unit/test_*.c, one binary each, linked with
# the format and reporter objects (the agent's core for its own: below);
# integration tests are the executables tests/integration/test_*;
# tests/run.sh runs both and prints the total line. `make test` runs them
# all after the package step, `make unit` the unit tests alone, `make check
# T=NAME` the tests whose name contains NAME.

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
# The reporter's objects without its main(), so tests can call into it.
REPORTER_LIB_OBJ := $(filter-out $(BUILD)/obj/reporter/cmd/main.o,$(REPORTER_OBJ))

$(BUILD)/tests/%: tests/unit/%.c tests/unit/rs_check.h $(FORMAT_OBJ) $(REPORTER_LIB_OBJ)
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -Wno-missing-prototypes -o $@ $< $(FORMAT_OBJ) $(REPORTER_LIB_OBJ) \
	    $(RS_LDFLAGS) -lcheck -lsubunit -lrt $(REPORTER_LIBS)

# The agent's core (ring, fd table, settings, clock, and the notices they
# print) has unit tests of its own: linked with the agent's objects as
# libagent.so has them (hidden visibility keeps symbols out of a shared
# object's exports only; in an executable they link as any other), not with
# the reporter's. A static pattern rule: it wins over the one above.
AGENT_UNIT_BIN := $(addprefix $(BUILD)/tests/test_,ring fdtab settings clock gpustart dlgate)
AGENT_CORE_OBJ := $(addprefix $(BUILD)/obj/preload/,ring.o fdtab.o config.o clock.o log.o gpustart.o util.o)

$(AGENT_UNIT_BIN): $(BUILD)/tests/%: tests/unit/%.c tests/unit/rs_check.h tests/unit/rs_agent_unit.h \
    $(AGENT_CORE_OBJ) $(FORMAT_OBJ)
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -Wno-missing-prototypes -DRS_SRC_DIR='"$(CURDIR)"' -o $@ $< \
	    $(AGENT_CORE_OBJ) $(FORMAT_OBJ) $(RS_LDFLAGS) -lcheck -lsubunit -lrt -llz4 -lz -lm
# test_dlgate includes the stack walker's gate whole (its loader state stood in).
$(BUILD)/tests/test_dlgate: preload/unwind.c preload/sample.h

# Small programs the integration tests run under the agent.
PROG_SRC := $(wildcard tests/programs/*.c)
PROG_BIN := $(PROG_SRC:tests/programs/%.c=$(BUILD)/tests/prog/%)

# The CUDA and NCCL programs read cuda.h and nccl.h as system headers.
$(BUILD)/tests/prog/cuda_paths $(BUILD)/tests/prog/cuda_contexts $(BUILD)/tests/prog/nccl_ops $(BUILD)/tests/prog/nccl_groups $(BUILD)/tests/prog/cuda_names $(BUILD)/tests/prog/graph_modes: RS_CFLAGS += -isystem $(CUDA_HOME)/include
$(BUILD)/tests/prog/cuda_names $(BUILD)/tests/prog/fork_unwind $(BUILD)/tests/prog/ctor_loader: RS_LDFLAGS += -ldl
# graph_modes links the driver (the simulator's at run time) and pthreads.
$(BUILD)/tests/prog/graph_modes: RS_LDFLAGS += -L$(BUILD)/sim -lcuda -pthread
$(BUILD)/tests/prog/graph_modes: $(BUILD)/sim/libcuda.so.1

$(BUILD)/tests/prog/%: tests/programs/%.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -o $@ $< $(RS_LDFLAGS)

# The agent again with RS_RING_CHECK, in its own tree (the sub-make keeps it
# up to date): a record reserved without the re-entrancy guard aborts there,
# saying where from (test_agent_guard).
.PHONY: $(BUILD)/check/libagent.so
$(BUILD)/check/libagent.so:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/check CFLAGS='$(CFLAGS) -DRS_RING_CHECK' $@
TEST_EXTRA += $(BUILD)/check/libagent.so

.PHONY: test-build
test-build: all $(UNIT_BIN) $(PROG_BIN) $(TEST_EXTRA)

test: test-deps
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)BUILD=$(BUILD) sh tests/run.sh

# The fast tier: the unit tests alone, built and run without the package
# step (seconds once the objects are built).
.PHONY: unit check
unit: $(UNIT_BIN)
	$(Q)BUILD=$(BUILD) sh tests/run.sh --unit

# One test, or the few whose name contains T (make check T=test_ring): the
# name is looked up before anything is built; no package step.
check:
	$(if $(T),,$(error make check T=NAME runs the tests whose file name contains NAME, e.g. T=test_ring))
	$(Q)BUILD=$(BUILD) sh tests/run.sh --list '$(T)'
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)BUILD=$(BUILD) sh tests/run.sh '$(T)'

# The what-if matrix alone (tests/integration/test_whatif.py): simulated
# jobs with one cause injected and without it, the findings' gains against
# the simulator's own clock (about two minutes here).
.PHONY: whatif
whatif:
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)BUILD=$(BUILD) sh tests/run.sh test_whatif
include tests/format.mk
include tests/fuzz/fuzz.mk
include tests/html.mk
include tests/flame.mk
include tests/modern/modern.mk

# A shared library for the Python + ctypes sampler test.
$(BUILD)/tests/prog/libspin.so: tests/programs/lib/spin.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -shared -o $@ $< $(RS_LDFLAGS)
test-build: $(BUILD)/tests/prog/libspin.so

# A library whose constructor closes a handle and looks a name up, or exits
# (test_agent_loader_lock).
$(BUILD)/tests/prog/libctor_dlclose.so: tests/programs/lib/ctor_dlclose.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -shared -o $@ $< -ldl $(RS_LDFLAGS)
test-build: $(BUILD)/tests/prog/libctor_dlclose.so

# A library loaded RTLD_LOCAL that needs the stand-ins (cuda_names dlsym).
$(BUILD)/tests/prog/libnames_probe.so: tests/programs/lib/names_probe.c $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnccl.so.2
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -shared -o $@ $< $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnccl.so.2 -ldl $(RS_LDFLAGS)
test-build: $(BUILD)/tests/prog/libnames_probe.so
include tests/cudart/cudart.mk

# The NVTX program: the toolkit's header-only NVTX v3 (read as system
# headers), which dlopens its injection library.
$(BUILD)/tests/prog/nvtx_ranges $(BUILD)/tests/prog/nvtx_steps $(BUILD)/tests/prog/step_parts: RS_CFLAGS += -isystem $(CUDA_HOME)/include
$(BUILD)/tests/prog/nvtx_ranges $(BUILD)/tests/prog/nvtx_steps $(BUILD)/tests/prog/step_parts: RS_LDFLAGS += -ldl

# The stress target (not in make test): STRESS_N short launches under the
# agent (default 500; STRESS_JOBS=pool,short: those kinds only), each held
# against what its processes did.
STRESS_N ?= 500
.PHONY: stress
stress:
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)BUILD=$(BUILD) STRESS_N=$(STRESS_N) python3 tests/stress/stress.py

# The soak (not in make test; docs/testing.md): simulated training and a real PyTorch
# DDP job under the agent for SOAK_MIN minutes (default 30), the agent's memory,
# drops, bytes per step and writer's lag sampled, the soaked job reported
# (tests/soak/soak.py says what passes). SOAK_KEEP=1 keeps its files in build/soak.
SOAK_MIN ?= 30
.PHONY: soak
soak:
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)BUILD=$(BUILD) SOAK_MIN=$(SOAK_MIN) python3 tests/soak/soak.py $(if $(SOAK_KEEP),--keep)
