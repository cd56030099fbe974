# Benchmarks: `make bench` builds $(BUILD)/bench_io, the I/O hook workload
# (tools/bench_io.c), and runs tools/bench.sh, which times it with and without
# the agent in alternating rounds and prints a Markdown table of the ratios.
# Included by the top Makefile after its own rules (needs BUILD, RS_CFLAGS).

$(BUILD)/bench_io: $(BUILD)/obj/tools/bench_io.o
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(RS_LDFLAGS)

bench: $(BUILD)/libagent.so $(BUILD)/ringside $(BUILD)/bench_io
	$(Q)sh tools/bench.sh $(BUILD)
