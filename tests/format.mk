# Tests of the trace format against outside truth: the C++ code flatc
# generates from formats/trace.fbs (flatc_verify), a ringside built with
# ASan+UBSan for the bad-input test, and the libFuzzer target for the chunk
# reader with its seed corpus. Everything built lands under $(BUILD).

FLATC    ?= flatc
FUZZ_CC  ?= clang
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all

# flatc's C++ for the schema, with field names for the layout checks.
$(BUILD)/gen/trace_generated.h: formats/trace.fbs
	$(call say,FLATC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(FLATC) --cpp --reflect-names -o $(@D) $<

$(BUILD)/tests/flatc_verify: tests/flatc_verify.cc $(BUILD)/gen/trace_generated.h formats/trace.h \
                             formats/chunk.h $(FORMAT_OBJ)
	$(call say,CXX,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=c++17 -O1 -g -Wall -Wextra -Werror -I. -I$(BUILD)/gen -o $@ $< $(FORMAT_OBJ) -llz4

# The reporter again, sanitized, in its own tree; the sub-make keeps it up to date.
.PHONY: $(BUILD)/asan/ringside
$(BUILD)/asan/ringside:
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CFLAGS='$(SAN_FLAGS)' \
	    LDFLAGS='$(SAN_FLAGS)' $@

# Seeds for the fuzzer: valid chunks and trace files made by the format code.
$(BUILD)/fuzz/gen_seeds: tests/fuzz/gen_seeds.c $(FORMAT_OBJ)
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -o $@ $< $(FORMAT_OBJ) $(RS_LDFLAGS) -llz4

$(BUILD)/fuzz/seeds/.made: $(BUILD)/fuzz/gen_seeds
	$(Q)rm -rf $(@D) && mkdir -p $(@D)
	$(Q)$< $(@D)
	$(Q)touch $@

# The fuzz target compiles the readers itself, so that they carry the
# fuzzer's coverage and the sanitizers.
FUZZ_SRC := tests/fuzz/fuzz_chunk.c $(FORMAT_SRC) reporter/load/load.c reporter/load/load_model.c reporter/load/coll_groups.c reporter/load/graphs.c \
            reporter/load/compile.c reporter/base/json.c reporter/load/model.c \
            reporter/load/summary.c reporter/load/flight.c reporter/load/period.c reporter/load/process.c reporter/load/waits.c \
            reporter/load/occupancy.c reporter/load/memory.c \
            reporter/load/gpumetrics.c reporter/load/nodes_load.c reporter/base/order.c \
            reporter/base/array.c reporter/base/table.c reporter/base/intern.c
$(BUILD)/fuzz/fuzz_chunk: $(FUZZ_SRC) $(wildcard formats/*.h) reporter/load/load.h reporter/load/load_model.h reporter/load/model.h
	$(call say,FUZZCC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(FUZZ_CC) -std=gnu11 -O1 -g -D_GNU_SOURCE -I. -Wall -Wextra -Werror \
	    -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	    -o $@ $(FUZZ_SRC) -llz4 -lm -pthread

FORMAT_TEST_EXTRA := $(BUILD)/tests/flatc_verify $(BUILD)/asan/ringside
ifneq ($(shell command -v $(FUZZ_CC) 2>/dev/null),)
FORMAT_TEST_EXTRA += $(BUILD)/fuzz/fuzz_chunk $(BUILD)/fuzz/seeds/.made
endif
TEST_EXTRA += $(FORMAT_TEST_EXTRA)
# Also named here, so that it holds wherever tests.mk includes this file.
test-build: $(FORMAT_TEST_EXTRA)
