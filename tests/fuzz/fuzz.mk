# The fuzzers of the readers of outside input other than the trace reader
# (format.mk has that one, fuzz_chunk): fuzz_kineto (Kineto JSON, plain and
# gzip through ISA-L or zlib, then the import's writer), fuzz_diff (report.json
# and folded stacks as `ringside diff` reads them), fuzz_nodes (the node
# sampler's /proc and /sys parsers, through RINGSIDE_TEST_SYSFS's tree).
# Each is built with libFuzzer, AddressSanitizer and UBSan; the reporter's
# sources are compiled once more with the same instrumentation. Seeds are
# real inputs (make_seeds.sh); inputs that once failed are kept in
# tests/fuzz/regress/NAME/ and run first, every time.
#
#   make fuzz [FUZZ_MIN=10]   every fuzzer (fuzz_chunk too) for FUZZ_MIN
#                             minutes each, one after the other
# The short runs in `make test` are tests/integration/test_fuzz.sh's.

FUZZ_MIN ?= 10
FUZZERS  := fuzz_kineto fuzz_diff fuzz_nodes
FUZZ_OBJ_FLAGS := -std=gnu11 -O1 -g -D_GNU_SOURCE -DRINGSIDE_VERSION='"$(VERSION)"' -I. \
                  -I$(CUDA_HOME)/include -Wall -Wextra -Werror -Wno-unused-command-line-argument \
                  -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
# kineto.c's dlopen of ISA-L goes through the fuzzer (FUZZ_GZIP=zlib refuses it).
FUZZ_REPORTER_SRC := $(filter-out reporter/cmd/main.c,$(REPORTER_SRC))
# The page's embedded files (page.o) are data: linked as the reporter has them.
FUZZ_REPORTER_OBJ := $(FUZZ_REPORTER_SRC:%.c=$(BUILD)/fuzzobj/%.o) $(FORMAT_SRC:%.c=$(BUILD)/fuzzobj/%.o) \
                     $(BUILD)/obj/reporter/out/page.o

$(BUILD)/fuzzobj/reporter/load/kineto.o: FUZZ_OBJ_FLAGS += -Ddlopen=rs_fuzz_dlopen
$(BUILD)/fuzzobj/%.o: %.c
	$(call say,FUZZCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_OBJ_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fuzz/fuzz_kineto $(BUILD)/fuzz/fuzz_diff: $(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_tree.h \
    tests/fuzz/fuzz_dlopen.c $(FUZZ_REPORTER_OBJ)
	$(call say,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_OBJ_FLAGS) -fsanitize=fuzzer -o $@ $< tests/fuzz/fuzz_dlopen.c $(FUZZ_REPORTER_OBJ) \
	    -llz4 -lyajl -lz -lm -ldw -lelf -lsqlite3 -ldl -pthread

# The sampler's parsers are static in preload/metrics.c: the fuzzer
# includes it whole, with the agent's few functions it calls stood in.
$(BUILD)/fuzz/fuzz_nodes: tests/fuzz/fuzz_nodes.c tests/fuzz/fuzz_tree.h preload/metrics.c preload/agent.h
	$(call say,FUZZLD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_OBJ_FLAGS) -fsanitize=fuzzer -o $@ $< -pthread

# Seeds: a small simtrain job reported twice (report.json, folded stacks,
# trace.json), the shared Kineto traces cut down, this machine's /proc and /sys.
$(BUILD)/fuzz/seeds-all/.made: tests/fuzz/make_seeds.sh tests/fuzz/kineto_cut.py $(BUILD)/ringside \
    $(BUILD)/libagent.so $(BUILD)/simtrain $(BUILD)/simlaunch $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnccl.so.2
	$(Q)rm -rf $(@D) && mkdir -p $(@D)
	$(Q)BUILD=$(BUILD) sh tests/fuzz/make_seeds.sh $(@D)
	$(Q)touch $@

FUZZ_BINS := $(FUZZERS:%=$(BUILD)/fuzz/%)
ifneq ($(shell command -v $(FUZZ_CC) 2>/dev/null),)
TEST_EXTRA += $(FUZZ_BINS) $(BUILD)/fuzz/seeds-all/.made
test-build: $(FUZZ_BINS) $(BUILD)/fuzz/seeds-all/.made
endif

.PHONY: fuzz
fuzz: all
	$(Q)$(MAKE) --no-print-directory $(SUB_J) test-build
	$(Q)BUILD=$(BUILD) FUZZ_SECONDS=$$(($(FUZZ_MIN) * 60)) sh tests/fuzz/run.sh fuzz_chunk $(FUZZERS)

-include $(shell find $(BUILD)/fuzzobj -name '*.d' 2>/dev/null)
