/* libFuzzer target for the node sampler's parsers of /proc and /sys
 * (preload/metrics.c): an input packs a RINGSIDE_TEST_SYSFS tree
 * (fuzz_tree.h: "%%%% proc/diskstats", "%%%% sys/class/net/eth0/speed",
 * "%%%% sys/block/sda/" for a folder); the fuzzer writes it out, finds the
 * sources in it as an elected sampler does, and takes two samples. The
 * parsers are static, so metrics.c is included whole; the few agent
 * functions it calls are stood in below, the series ones checking what
 * the sampler hands over: every point on a series defined in this
 * process, every name a terminated string. */
#include "preload/metrics.c"

#include <stdarg.h>

#include "tests/fuzz/fuzz_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- the agent, stood in ---- */

struct rs_hot rs_hot;
struct rs_settings rs_cfg;
struct rs_identity rs_id;
__thread struct rs_thread_hot rs_th;
__thread int rs_own_fds;

static uint32_t nseries;

uint32_t rs_series_define(int kind, int link, const char *name, int device, uint64_t rate)
{
    (void)kind; (void)link; (void)device; (void)rate;
    if (strnlen(name, 4096) >= 4096)
        abort();
    return ++nseries;
}

void rs_series_point(uint32_t id, uint64_t ts_ns, uint64_t value)
{
    (void)ts_ns; (void)value;
    if (id == 0 || id > nseries) {
        fprintf(stderr, "fuzz_nodes: a point on series %u, %u defined\n", id, nseries);
        abort();
    }
}

int rs_writer_has_file(void)
{
    return 1;
}

void rs_notice(const char *fmt, ...)
{
    (void)fmt;
}

void rs_debug(const char *fmt, ...)
{
    (void)fmt;
}

int rs_mkdirs(char *path)
{
    (void)path;
    return -1;
}

int rs_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack)
{
    (void)t; (void)fn; (void)arg; (void)stack;
    return -1;
}

/* ---- the target ---- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_tree_root(M.root, sizeof M.root, "nodes");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_tree_write(M.root, data, size);
    nseries = 0;
    define_all();
    sample();
    sample();
    return 0;
}
