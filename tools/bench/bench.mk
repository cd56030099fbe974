# Benchmarks: `make bench` builds $(BUILD)/bench_io, the I/O hook workload
# (tools/bench/bench_io.c), and $(BUILD)/bench_launch, the CUDA launch workload
# (tools/bench/bench_launch.c), and runs tools/bench/bench.sh, which times them and
# simtrain with and without the agent in alternating rounds and prints
# Markdown tables of the ratios.
# tools/bench/bench_sample.sh then times the sampler on a CPU-bound program
# ($(BUILD)/bench_run measures CPU time), tools/bench/bench_start.sh the fixed
# cost of a process that does nothing, tools/bench/bench_import.py what it adds
# to `import torch` and what a sample costs on both PyTorch stacks (host and
# chroot), tools/bench/bench_torch.py the agent
# against the PyTorch profiler on a real training loop (Debian's
# python3-torch), and tools/bench/bench_history.py the run history's indexing
# and its page with 1,000 runs.
# Included by the top Makefile after its own rules (needs BUILD, RS_CFLAGS).

$(BUILD)/bench_io: $(BUILD)/obj/tools/bench/bench_io.o
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(RS_LDFLAGS)

# The CUDA part: bench_launch (tools/bench/bench_launch.c) on the simulated driver,
# and simtrain end to end.
$(BUILD)/bench_launch: $(BUILD)/obj/tools/bench/bench_launch.o
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(RS_LDFLAGS)

# The wait hooks: uncontended mutex pairs and a condition variable ping-pong
# (tools/bench/bench_wait.c).
$(BUILD)/bench_wait: $(BUILD)/obj/tools/bench/bench_wait.o
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(RS_LDFLAGS) -lpthread

$(BUILD)/bench_run: $(BUILD)/obj/tools/bench/bench_run.o
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $< $(RS_LDFLAGS)

bench: $(BUILD)/libagent.so $(BUILD)/ringside $(BUILD)/bench_io $(BUILD)/bench_wait $(BUILD)/bench_launch \
       $(BUILD)/simtrain $(BUILD)/sim/libcuda.so.1 $(BUILD)/gen_job $(BUILD)/bench_run \
       $(BUILD)/tests/prog/hot3
	$(Q)sh tools/bench/bench.sh $(BUILD)
	$(Q)python3 tools/bench/bench_report.py $(BUILD)
	$(Q)sh tools/bench/bench_sample.sh $(BUILD)
	$(Q)sh tools/bench/bench_start.sh $(BUILD)
	$(Q)python3 tools/bench/bench_import.py $(BUILD)
	$(Q)python3 tools/bench/bench_torch.py $(BUILD)
	$(Q)python3 tools/bench/bench_history.py $(BUILD)

# The reporter's part: build/gen_job writes a synthetic job of ringside files
# (tools/bench/gen_job.c), and tools/bench/bench_report.py times import + report on the
# shared Kineto traces against HTA, then runs the default command a user
# types, `ringside report DIR -o OUT` (all outputs), on generated jobs beside
# the targets: 64 ranks x 1M records (wall, CPU, records/s/core, peak
# memory, size of each output); 64 x 250k, 1M, 4M (memory flat in the job's
# length); 1,024 x 100k; and `mpirun -n 2` against one process where the
# reporter is built with MPI. Each command runs under a memory limit
# (MEM_LIMIT_GB, default 8). The jobs take up to about 7 GB in $BENCH_TMP
# (/tmp) at once, plus one run's outputs (today's 64 x 1M OUT: 21 GB), and
# are deleted after their rows. Knobs (environment):
# ROUNDS, KINETO=0, RANKS, EVENTS, SCALE=0 (Kineto and the 64 x 1M row only),
# WIDE_RANKS, WIDE_EVENTS, MPI=0|1, MPI_NP, SMALL=1 (small sizes, seconds),
# MEM_LIMIT_GB, TIMEOUT, BENCH_TMP; see the script's header.
GEN_JOB_OBJ := $(BUILD)/obj/tools/bench/gen_job.o $(FORMAT_OBJ) \
               $(filter-out $(BUILD)/obj/reporter/cmd/main.o,$(REPORTER_OBJ))
$(BUILD)/gen_job: $(GEN_JOB_OBJ)
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $(GEN_JOB_OBJ) $(RS_LDFLAGS) $(REPORTER_LIBS)

# `make bench-report` runs this part alone (e.g. `make bench-report SMALL=1
# KINETO=0`: make passes command-line variables to the script's environment).
.PHONY: bench-report
bench-report: $(BUILD)/ringside $(BUILD)/gen_job
	$(Q)python3 tools/bench/bench_report.py $(BUILD)

# `make bench-history` runs the run history's part alone (tools/bench/bench_history.py).
.PHONY: bench-history
bench-history: $(BUILD)/ringside $(BUILD)/libagent.so $(BUILD)/simtrain $(BUILD)/simlaunch $(BUILD)/sim/libcuda.so.1
	$(Q)python3 tools/bench/bench_history.py $(BUILD)

# `make bench-torch` runs the PyTorch part alone.
.PHONY: bench-torch
bench-torch: $(BUILD)/libagent.so
	$(Q)python3 tools/bench/bench_torch.py $(BUILD)
