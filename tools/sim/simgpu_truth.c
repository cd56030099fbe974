/* The truth file: with SIMGPU_TRUTH=FILE, one JSON line per operation the model has
 * decided (format in simgpu.h). Tests hold what the agent recorded and what the
 * reporter concluded against it. Lines are written whole with O_APPEND so that
 * several processes can share one file; "%p" in FILE gives each process its own.
 * The lines wait in memory until sim_truth_flush (the next call's start, a wait,
 * the progress thread, exit): a write after a handover would make the call
 * outlast its handover by a system call, which the driver's calls do not. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tools/sim/simgpu_internal.h"

static struct {
    int fd;
    pid_t pid;        /* the process the file was opened for: a forked child reopens */
    int off;          /* SIMGPU_TRUTH unset, or the file could not be opened */
    char *buf;        /* lines not yet written, of process buf_pid */
    size_t len, cap;
    pid_t buf_pid;
} sim_truth = { .fd = -1 };

#define SIM_TRUTH_FLUSH_AT (256u << 10)

static void sim_truth_fail(void)
{
    fprintf(stderr, "simgpu: truth file write failed: %m\n");
    sim_truth.off = 1;
    close(sim_truth.fd);
    sim_truth.fd = -1;
}

/* Operations decided whose lines are not made yet (a reference each): their
 * formatting too waits for sim_truth_flush. */
static struct sim_op_list sim_truth_ops;

static void sim_truth_format(const struct sim_op *op);
static int sim_truth_open(void);
static void sim_truth_keep(const char *line, size_t n);

void sim_truth_write(const struct sim_op *op)
{
    if (op->kind == SIM_MARK || !sim_truth_open())
        return;
    /* a collective's description is the library's, released once decided */
    if (op->kind != SIM_EXT && sim_op_list_push(&sim_truth_ops, (struct sim_op *)op) == 0) {
        sim_op_ref((struct sim_op *)op);
        if (sim_truth_ops.n >= 4096)
            sim_truth_flush();
        return;
    }
    sim_truth_format(op);
}

void sim_truth_flush(void)
{
    if (sim_truth_ops.n) {
        size_t n = sim_truth_ops.n;
        sim_truth_ops.n = 0;
        for (size_t i = 0; i < n; i++) {
            if (sim_truth.fd >= 0 && sim_truth.pid == getpid())
                sim_truth_format(sim_truth_ops.ops[i]);
            sim_op_unref(sim_truth_ops.ops[i]);
        }
    }
    if (!sim_truth.len)
        return;
    /* a forked child's copy of its parent's lines is the parent's to write */
    if (sim_truth.buf_pid != getpid() || sim_truth.fd < 0 || sim_truth.pid != getpid()) {
        sim_truth.len = 0;
        return;
    }
    /* whole lines per write: O_APPEND keeps them whole among processes */
    size_t o = 0;
    while (o < sim_truth.len) {
        ssize_t n = write(sim_truth.fd, sim_truth.buf + o, sim_truth.len - o);
        if (n <= 0) {
            sim_truth_fail();
            break;
        }
        o += (size_t)n;
    }
    sim_truth.len = 0;
}

/* SIMGPU_TRUTH_MEMORY=1: a line per device the process held memory of (format
 * in simgpu.h), under sim_lock. */
static void sim_truth_memory(void)
{
    char line[512], rank[16] = "null";
    if (!sim_cfg.truth_memory || sim_cfg.pid != (int)getpid() || !sim_truth_open())
        return;
    if (sim_cfg.rank >= 0)
        snprintf(rank, sizeof(rank), "%d", sim_cfg.rank);
    for (int d = 0; d < sim_cfg.devices; d++) {
        const struct sim_dev_mem *m = sim_mem_of(d);
        if (!m || !m->peak_used)
            continue;
        int n = snprintf(line, sizeof(line),
                         "{\"pid\":%d,\"rank\":%s,\"device\":%d,\"kind\":\"device_memory\","
                         "\"capacity_bytes\":%llu,\"context_bytes\":%llu,\"contexts\":%llu,"
                         "\"nccl_bytes\":%llu,\"peak_bytes\":%llu,\"peak_ns\":%llu,\"end_bytes\":%llu}\n",
                         (int)getpid(), rank, d, (unsigned long long)sim_cfg.mem_bytes,
                         (unsigned long long)SIM_CTX_RESERVE_BYTES,
                         (unsigned long long)(SIM_CTX_RESERVE_BYTES ? m->peak[SIM_MEM_CONTEXT] / SIM_CTX_RESERVE_BYTES : 0),
                         (unsigned long long)m->peak[SIM_MEM_INTERNAL], (unsigned long long)m->peak_used,
                         (unsigned long long)m->peak_ns, (unsigned long long)m->used);
        if (n > 0 && (size_t)n < sizeof(line))
            sim_truth_keep(line, (size_t)n);
    }
}

/* At exit: what is left (after simgpu_model.c's drain, which comes first or
 * flushes itself). */
__attribute__((destructor)) static void sim_truth_at_exit(void)
{
    pthread_mutex_lock(&sim_lock);
    sim_truth_memory();
    sim_truth_flush();
    pthread_mutex_unlock(&sim_lock);
}

static void sim_truth_keep(const char *line, size_t n)
{
    if (sim_truth.len && sim_truth.buf_pid != getpid())
        sim_truth.len = 0;
    sim_truth.buf_pid = getpid();
    if (sim_truth.len + n > sim_truth.cap) {
        size_t cap = sim_truth.cap ? sim_truth.cap * 2 : 64u << 10;
        while (cap < sim_truth.len + n)
            cap *= 2;
        char *b = realloc(sim_truth.buf, cap);
        if (!b) {
            sim_truth_flush();
            if (write(sim_truth.fd, line, n) < 0)
                sim_truth_fail();
            return;
        }
        sim_truth.buf = b;
        sim_truth.cap = cap;
    }
    memcpy(sim_truth.buf + sim_truth.len, line, n);
    sim_truth.len += n;
    if (sim_truth.len >= SIM_TRUTH_FLUSH_AT)
        sim_truth_flush();
}

/* The path with each "%p" replaced by the pid. */
static void sim_truth_path(const char *pattern, char *out, size_t len)
{
    size_t o = 0;
    for (const char *p = pattern; *p && o + 1 < len; p++) {
        if (p[0] == '%' && p[1] == 'p') {
            int n = snprintf(out + o, len - o, "%d", (int)getpid());
            o += n > 0 ? (size_t)n : 0;
            p++;
        } else {
            out[o++] = *p;
        }
    }
    out[o < len ? o : len - 1] = '\0';
}

static int sim_truth_open(void)
{
    if (sim_truth.fd >= 0 && sim_truth.pid == getpid())
        return 1;
    if (sim_truth.off)
        return 0;
    const char *pattern = getenv("SIMGPU_TRUTH");
    if (!pattern || !*pattern) {
        sim_truth.off = 1;
        return 0;
    }
    char path[4096];
    sim_truth_path(pattern, path, sizeof(path));
    if (sim_truth.fd >= 0)
        close(sim_truth.fd);
    sim_truth.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    sim_truth.pid = getpid();
    if (sim_truth.fd < 0) {
        fprintf(stderr, "simgpu: cannot open truth file %s: %m\n", path);
        sim_truth.off = 1;
        return 0;
    }
    return 1;
}

/* Writes s as a JSON string (quotes included); returns the bytes used. */
static size_t sim_json_string(char *buf, size_t len, const char *s)
{
    size_t o = 0;
    if (len < 3)
        return 0;
    buf[o++] = '"';
    for (; *s && o + 8 < len; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)c;
        } else if (c < 0x20) {
            o += (size_t)snprintf(buf + o, len - o, "\\u%04x", c);
        } else {
            buf[o++] = (char)c;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return o;
}

static const char *const sim_kind_names[] = {
    [SIM_MARK] = "mark", [SIM_KERNEL] = "kernel", [SIM_MEMCPY] = "memcpy", [SIM_MEMSET] = "memset",
};

static void sim_truth_format(const struct sim_op *op)
{
    char name[1024], own[1024], line[4096], geom[192] = "";
    sim_json_string(name, sizeof(name), op->name ? op->name : "");
    if (op->geom.blocks)
        snprintf(geom, sizeof(geom),
                 ",\"blocks\":%llu,\"threads_per_block\":%u,\"blocks_per_sm\":%u,\"waves\":%llu"
                 ",\"sm_coverage\":%.6f,\"occupancy\":%.6f",
                 (unsigned long long)op->geom.blocks, op->geom.threads_per_block, op->geom.blocks_per_sm,
                 (unsigned long long)op->geom.waves, op->geom.sm_coverage, op->geom.occupancy);
    for (int i = 0;; i++) {
        int n;
        if (op->kind == SIM_EXT) {
            if (op->ext->describe(op->ext_arg, i, own, sizeof(own)) < 0)
                break;
            n = snprintf(line, sizeof(line),
                         "{\"pid\":%d,\"device\":%d,\"stream\":%llu,\"kind\":\"%s\",\"name\":%s%s%s",
                         (int)getpid(), op->device, (unsigned long long)op->stream_id,
                         op->ext->kind, name, own, geom);
        } else {
            if (i > 0)
                break;
            char rank[16] = "null", dir[32] = "";
            if (sim_cfg.rank >= 0)
                snprintf(rank, sizeof(rank), "%d", sim_cfg.rank);
            if (op->direction)
                snprintf(dir, sizeof(dir), ",\"direction\":\"%s\"", op->direction);
            n = snprintf(line, sizeof(line),
                         "{\"pid\":%d,\"rank\":%s,\"device\":%d,\"stream\":%llu,\"kind\":\"%s\","
                         "\"name\":%s,\"bytes\":%llu%s%s",
                         (int)getpid(), rank, op->device, (unsigned long long)op->stream_id,
                         sim_kind_names[op->kind], name, (unsigned long long)op->bytes, dir, geom);
        }
        if (n < 0 || (size_t)n >= sizeof(line))
            continue;
        char graph[64] = "";
        if (op->graph)
            snprintf(graph, sizeof(graph), ",\"graph\":%llu", (unsigned long long)op->graph);
        if (op->kind == SIM_EXT)
            snprintf(graph + strlen(graph), sizeof(graph) - strlen(graph), ",\"ready_ns\":%llu",
                     (unsigned long long)op->ready_ns);
        int m = snprintf(line + n, sizeof(line) - (size_t)n,
                         "%s%s,\"launch_ns\":%llu,\"start_ns\":%llu,\"end_ns\":%llu}\n",
                         graph, op->failed ? ",\"failed\":true" : "",
                         (unsigned long long)op->launch_ns, (unsigned long long)op->start_ns,
                         (unsigned long long)op->end_ns);
        if (m < 0 || (size_t)(n + m) >= sizeof(line))
            continue;
        sim_truth_keep(line, (size_t)(n + m));
    }
}
