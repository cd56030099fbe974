# ringside build. `make` builds build/libagent.so and build/ringside;
# `make deps` installs what is missing (Debian) to build and run the demo,
# `make test-deps` what the tests add; `make test`, `make unit`
# (the unit tests alone), `make check T=NAME` (one test), `make bench`,
# `make demo`, `make docs` (the README's picture of a report), `make install PREFIX=...`.
# V=1 shows full commands.

CUDA_HOME ?= /usr/local/cuda
PREFIX    ?= /usr/local
BUILD     ?= build
CC        ?= cc
CXX       ?= c++
# The builds that `make test`, `make check` and `make demo` start run on
# every core, unless make was given -j itself (its jobserver goes on then).
SUB_J = $(if $(filter -j%,$(MAKEFLAGS))$(findstring jobserver,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
        -Wpointer-arith -Wformat=2 -Wundef -Wcast-align -Wvla -Werror
# The user's CFLAGS come last so they can override anything above.
VERSION   := 0.1.0
RS_CFLAGS  = -std=gnu11 -O2 -g -fPIC -fno-omit-frame-pointer -pthread -U_FORTIFY_SOURCE \
             -D_GNU_SOURCE -DRINGSIDE_VERSION='"$(VERSION)"' -I. -I$(CUDA_HOME)/include \
             $(WARN) -MMD -MP $(CFLAGS)
RS_LDFLAGS = -pthread $(LDFLAGS)

ifeq ($(V),1)
Q :=
say = @true
else
Q := @
say = @printf '  %-6s %s\n' $(1) $(2)
endif

FORMAT_SRC   := $(wildcard formats/*.c)
AGENT_SRC    := $(wildcard preload/*.c)
REPORTER_SRC := $(wildcard reporter/*/*.c)

FORMAT_OBJ   := $(FORMAT_SRC:%.c=$(BUILD)/obj/%.o)
AGENT_OBJ    := $(AGENT_SRC:%.c=$(BUILD)/obj/%.o)
REPORTER_OBJ := $(REPORTER_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/reporter/out/page.o

LZ4_STATIC := $(shell for d in /usr/lib/$$($(CC) -print-multiarch 2>/dev/null) /usr/lib64 /usr/lib; do \
                [ -f $$d/liblz4.a ] && echo $$d/liblz4.a && break; done)

.PHONY: all deps test-deps test bench demo docs install clean gpu-check
all: $(BUILD)/libagent.so $(BUILD)/ringside

# The agent is compiled with hidden visibility: only RS_EXPORT hooks leave it.
$(AGENT_OBJ): RS_CFLAGS += -fvisibility=hidden -ftls-model=initial-exec
# The I/O hooks without a frame pointer, as glibc's own wrappers are: one
# register more for the common path, which then saves one fewer (a 64-byte
# pwrite in one process, hook over the bare call 29.8 -> 28.6 ns, medians of
# 21-25 interleaved runs). Stacks through them unwind by their DWARF CFI.
# The same for the wait hooks, whose lock fast path is a try and a return.
$(BUILD)/obj/preload/hook_io.o $(BUILD)/obj/preload/hook_wait.o: RS_CFLAGS += -fomit-frame-pointer
# cuda.h and nccl.h are not written for our warnings: read them as system headers.
$(BUILD)/obj/preload/hook_cuda.o $(BUILD)/obj/preload/hook_nccl.o $(BUILD)/obj/preload/gputime.o \
    $(BUILD)/obj/preload/gpuinfo.o: \
    RS_CFLAGS += -isystem $(CUDA_HOME)/include

# MPI: `ringside report` runs as an MPI program when Open MPI's headers are
# there (Debian libopenmpi-dev); MPI=0 builds it without, MPI=1 insists.
MPI ?= auto
ifneq ($(MPI),0)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell pkg-config --libs ompi-c 2>/dev/null)
ifeq ($(MPI_LIBS),)
ifeq ($(MPI),1)
$(error MPI=1: no Open MPI found by pkg-config (ompi-c); install libopenmpi-dev)
endif
else
$(BUILD)/obj/reporter/mpi/mpi.o: RS_CFLAGS += -DRSR_HAVE_MPI $(MPI_CFLAGS)
endif
endif
# Open MPI installed (or removed) after a build: mpi.o is built again.
$(BUILD)/obj/reporter/mpi/mpi.o: $(BUILD)/mpi.flags
$(BUILD)/mpi.flags: FORCE
	@mkdir -p $(@D)
	@echo '$(MPI_CFLAGS) $(MPI_LIBS)' | cmp -s - $@ || echo '$(MPI_CFLAGS) $(MPI_LIBS)' > $@
.PHONY: FORCE
FORCE:

# What the reporter's objects link with (ringside, and tests and tools built from them).
REPORTER_LIBS = -llz4 -lyajl -lz -lm -ldw -lelf -lsqlite3 $(MPI_LIBS)

$(BUILD)/obj/%.o: %.c
	$(call say,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(RS_CFLAGS) -c -o $@ $<

# The page's scripts and style sheets (reporter/out/page/) go into the
# reporter as written there, less their opening comment, the lines that
# start with // and the last line end; the sheets a page carries on one line
# (PAGE_JOINED) lose every line end. page.S reads them from $(BUILD)/page,
# and is assembled again when one of them changes.
PAGE_SRC    := $(wildcard reporter/out/page/*.js reporter/out/page/*.css)
PAGE_JOINED := report.css history.css
$(BUILD)/page/%: reporter/out/page/%
	$(call say,PAGE,$<)
	$(Q)mkdir -p $(@D)
	$(Q)awk -v sep='$(if $(filter $*,$(PAGE_JOINED)),,\n)' \
	    'NR == 1 && !/^\/\*/ { print FILENAME ": does not open with a /* comment */" > "/dev/stderr"; exit 1 } \
	     !past { past = /\*\/[ \t]*$$/; next } /^[ \t]*\/\// { next } { printf "%s%s", n++ ? sep : "", $$0 }' \
	    $< > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/reporter/out/page.o: reporter/out/page.S $(PAGE_SRC:reporter/out/page/%=$(BUILD)/page/%)
	$(call say,AS,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -c -Wa,-I$(BUILD)/page -o $@ $<

# The agent: only the interposed functions are exported (version script);
# LZ4 is linked in statically so ldd lists only the C library's own. Its
# references to its own functions are bound at link time
# (-Bsymbolic-functions: the hooks' tables hold 130 of them) and the C
# library's on first call (no -z now): a process pays at load for neither
# (a /bin/true under the agent: 356k instructions, 63k of them those lookups
# with -z now).
$(BUILD)/libagent.so: $(AGENT_OBJ) $(FORMAT_OBJ) preload/agent.map
	$(call say,LD,$@)
	$(Q)$(CC) -shared -fvisibility=hidden -Wl,--version-script=preload/agent.map \
	    -Wl,-z,defs -Wl,-Bsymbolic-functions -o $@ $(AGENT_OBJ) $(FORMAT_OBJ) $(LZ4_STATIC) -ldl $(RS_LDFLAGS)

$(BUILD)/ringside: $(REPORTER_OBJ) $(FORMAT_OBJ)
	$(call say,LD,$@)
	$(Q)$(CC) -o $@ $(REPORTER_OBJ) $(FORMAT_OBJ) $(RS_LDFLAGS) $(REPORTER_LIBS)

# Parts with their own rules: the simulator and workloads, tests, benchmarks.
-include tools/sim/sim.mk
-include tools/bench/bench.mk
-include tests/tests.mk
-include tests/gpu/gpu.mk

# What building and `make demo` need; `make test` adds what the tests use.
deps:
	@sh tools/scripts/deps.sh build
test-deps:
	@sh tools/scripts/deps.sh test

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/ringside
	install -m 0755 $(BUILD)/ringside $(DESTDIR)$(PREFIX)/bin/ringside
	install -m 0755 $(BUILD)/libagent.so $(DESTDIR)$(PREFIX)/lib/ringside/libagent.so

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# The demo: a simulated 4-rank training job (data loading and checkpoints
# included) under the agent, then the report. Like `test`, it installs what
# is missing first, and builds only after that (a prerequisite would be
# built beside deps under -j).
DEMO := $(BUILD)/demo
demo: deps
	$(Q)$(MAKE) --no-print-directory $(SUB_J) all
	@rm -rf $(DEMO) && mkdir -p $(DEMO)/ckpt
	@echo "demo: 4 simulated ranks under the agent, traces in $(DEMO)/trace"
	$(Q)LD_LIBRARY_PATH=$(abspath $(BUILD))/sim RINGSIDE_OUT=$(abspath $(DEMO))/trace \
	    LD_PRELOAD=$(abspath $(BUILD))/libagent.so $(BUILD)/simlaunch -n 4 -- \
	    $(BUILD)/simtrain --steps 30 --layers 4 --data-us 2000 --ckpt-every 10 --ckpt-mb 32 \
	    --ckpt-dir $(abspath $(DEMO))/ckpt --straggler 2:1.5
	$(Q)$(BUILD)/ringside report $(DEMO)/trace -o $(DEMO)/report
	@echo "demo: report in $(DEMO)/report/report.json"

# The README's picture: the demo's report page, its first screen, taken with
# headless Chromium into docs/report.png. pngquant or optipng shrink it when
# they are installed; nothing is installed for them.
DOCS_SHOT := $(BUILD)/docs/report.png
docs: demo
	@command -v chromium >/dev/null || { echo "docs: chromium is missing (make test-deps installs it)" >&2; exit 1; }
	@rm -rf $(BUILD)/docs && mkdir -p $(BUILD)/docs
	$(call say,SHOT,docs/report.png)
	$(Q)chromium --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
	    --host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir=$(abspath $(BUILD))/docs/profile \
	    --window-size=1200,800 --screenshot=$(abspath $(DOCS_SHOT)) \
	    file://$(abspath $(DEMO))/report/index.html 2>/dev/null
	$(Q)if command -v pngquant >/dev/null; then pngquant --force --skip-if-larger --output $(DOCS_SHOT) $(DOCS_SHOT) || true; \
	    elif command -v optipng >/dev/null; then optipng -quiet $(DOCS_SHOT); fi
	$(Q)cp $(DOCS_SHOT) docs/report.png
	@echo "docs: docs/report.png, $$(wc -c < docs/report.png) bytes"
