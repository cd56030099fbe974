/* Settings and identity, read once at start from the environment (design.md,
 * 'Environment' and 'Identity'): rank, local rank, world size and job from
 * the first launcher found (torchrun, Slurm, Open MPI, PMI, RINGSIDE_RANK),
 * and the job folder under RINGSIDE_OUT. */
#include "preload/agent.h"
#include "formats/trace.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct rs_settings rs_cfg;
struct rs_identity rs_id;

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* An integer setting: the default when unset; a notice and the default
 * when malformed or out of [lo, hi]. */
static long env_long(const char *name, long dflt, long lo, long hi)
{
    const char *v = env(name);
    if (!v)
        return dflt;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || *end || n < lo || n > hi) {
        rs_notice("%s=%s is not a number from %ld to %ld; using %ld", name, v, lo, hi, dflt);
        return dflt;
    }
    return n;
}

static int env_int(const char *name, int dflt)
{
    const char *v = env(name);
    return v ? atoi(v) : dflt;
}

static int env_flag(const char *name, int dflt)
{
    return (int)env_long(name, dflt, 0, 1);
}

static void gpu_timing(void)
{
    const char *v = env("RINGSIDE_GPU_TIMING");
    rs_cfg.gpu_timing = 1;
    if (!v || strcmp(v, "all") == 0)
        return;
    if (strcmp(v, "none") == 0) {
        rs_cfg.gpu_timing = 0;
        return;
    }
    rs_cfg.gpu_timing = (int)env_long("RINGSIDE_GPU_TIMING", 1, 1, 1000000000);
}

/* Keeps only characters safe in a file name. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
            *s = '_';
}

static void identity(void)
{
    struct rs_identity *id = &rs_id;
    id->rank = id->local_rank = id->world_size = id->parent_rank = -1;
    id->role = RSF_ROLE_OTHER;
    id->pid = getpid();
    id->ppid = getppid();
    if (gethostname(id->host, sizeof id->host - 1) != 0)
        strcpy(id->host, "unknown");
    char *dot = strchr(id->host, '.');
    if (dot)
        *dot = 0;
    sanitize(id->host);

    static const struct { const char *rank, *local, *size; } launchers[] = {
        { "RANK", "LOCAL_RANK", "WORLD_SIZE" },                              /* torchrun */
        { "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS" },                 /* Slurm */
        { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE" },
        { "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE" },                       /* PMI, MPICH */
        { "RINGSIDE_RANK", "RINGSIDE_LOCAL_RANK", "RINGSIDE_WORLD_SIZE" },
    };
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        if (!env(launchers[i].rank))
            continue;
        id->rank = env_int(launchers[i].rank, -1);
        id->local_rank = env_int(launchers[i].local, -1);
        id->world_size = env_int(launchers[i].size, -1);
        break;
    }
    /* A process started by a rank (a compiler, a helper script) inherits
     * the rank's environment: the first process to claim the rank marks it
     * with its pid, and later processes are the rank's children. */
    if (id->rank >= 0) {
        const char *owner = env("RINGSIDE_RANK_PID");
        if (owner && atoi(owner) != id->pid) {
            id->parent_rank = id->rank;
            id->rank = -1;
            id->role = RSF_ROLE_CHILD;
        } else {
            char pid[32];
            snprintf(pid, sizeof pid, "%d", id->pid);
            setenv("RINGSIDE_RANK_PID", pid, 1);
            id->role = RSF_ROLE_RANK;
        }
    }

    const char *job = env("TORCHELASTIC_RUN_ID");
    char buf[256];
    if (!job && env("SLURM_JOB_ID")) {
        snprintf(buf, sizeof buf, "%s.%s", env("SLURM_JOB_ID"),
                 env("SLURM_STEP_ID") ? env("SLURM_STEP_ID") : "0");
        job = buf;
    }
    if (!job)
        job = env("OMPI_MCA_ess_base_jobid");
    if (!job)
        job = env("PMIX_NAMESPACE");
    if (!job)
        job = env("RINGSIDE_JOB");
    if (!job) {
        /* No launcher: name a job for this process tree and pass it on, so
         * the processes it starts write to the same folder. */
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        snprintf(buf, sizeof buf, "%s-%04d%02d%02d-%02d%02d%02d-%d", id->host, tm.tm_year + 1900,
                 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, id->pid);
        setenv("RINGSIDE_JOB", buf, 0);
        job = buf;
    }
    snprintf(id->job, sizeof id->job, "%s", job);
    sanitize(id->job);
}

void rs_config_load(int argc, char **argv)
{
    memset(&rs_cfg, 0, sizeof rs_cfg);
    rs_cfg.log = (int)env_long("RINGSIDE_LOG", 1, 0, 2);
    rs_cfg.disable = env_flag("RINGSIDE_DISABLE", 0);
    rs_cfg.io = env_flag("RINGSIDE_IO", 1);
    rs_cfg.cuda = env_flag("RINGSIDE_CUDA", 1);
    rs_cfg.nccl = env_flag("RINGSIDE_NCCL", 1);
    gpu_timing();
    rs_cfg.sample_hz = (int)env_long("RINGSIDE_SAMPLE_HZ", 99, 0, 100000);
    rs_cfg.buffer_bytes = (size_t)env_long("RINGSIDE_BUFFER_MB", 64, 1, 1 << 20) << 20;
    rs_cfg.flush_ms = (unsigned)env_long("RINGSIDE_FLUSH_MS", 1000, 10, 3600 * 1000);
    rs_cfg.test_skew = env("RINGSIDE_TEST_CLOCK_SKEW_US") != NULL;
    rs_cfg.test_skew_us = env_long("RINGSIDE_TEST_CLOCK_SKEW_US", 0, -3600L * 1000000, 3600L * 1000000);
    const char *ex = getenv("RINGSIDE_IO_EXCLUDE"); /* set but empty: exclude nothing */
    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "%s", ex ? ex : "/proc:/sys:/dev");

    const char *out = env("RINGSIDE_OUT");
    if (!out)
        out = "ringside-trace";
    if (out[0] == '/' || !getcwd(rs_cfg.out, sizeof rs_cfg.out))
        snprintf(rs_cfg.out, sizeof rs_cfg.out, "%s", out);
    else {
        size_t n = strlen(rs_cfg.out);
        snprintf(rs_cfg.out + n, sizeof rs_cfg.out - n, "/%s", out);
    }

    /* A copy: programs rewrite their argv (process titles). */
    static char argbuf[16384];
    static char *args[256];
    size_t used = 0;
    rs_id.argc = 0;
    for (int i = 0; argv && i < argc && i < 256; i++) {
        size_t n = strlen(argv[i]) + 1;
        if (used + n > sizeof argbuf)
            break;
        memcpy(argbuf + used, argv[i], n);
        args[rs_id.argc++] = argbuf + used;
        used += n;
    }
    rs_id.argv = args;
    identity();
}

void rs_identity_forked(void)
{
    if (rs_id.rank >= 0)
        rs_id.parent_rank = rs_id.rank;
    rs_id.rank = -1;
    rs_id.role = RSF_ROLE_CHILD;
    rs_id.ppid = rs_id.pid;
    rs_id.pid = getpid();
}

int rs_config_pairs(const char **keys, const char **values, int max)
{
    static char vals[9][64];
    static const char *const names[] = {
        "io", "cuda", "nccl", "gpu_timing", "sample_hz", "buffer_mb", "flush_ms", "log", "io_exclude",
    };
    snprintf(vals[0], 64, "%d", rs_cfg.io);
    snprintf(vals[1], 64, "%d", rs_cfg.cuda);
    snprintf(vals[2], 64, "%d", rs_cfg.nccl);
    snprintf(vals[3], 64, "%d", rs_cfg.gpu_timing);
    snprintf(vals[4], 64, "%d", rs_cfg.sample_hz);
    snprintf(vals[5], 64, "%zu", rs_cfg.buffer_bytes >> 20);
    snprintf(vals[6], 64, "%u", rs_cfg.flush_ms);
    snprintf(vals[7], 64, "%d", rs_cfg.log);
    int n = 0;
    for (; n < 8 && n < max; n++) {
        keys[n] = names[n];
        values[n] = vals[n];
    }
    if (n < max) {
        keys[n] = names[8];
        values[n] = rs_cfg.exclude;
        n++;
    }
    return n;
}
