/* Settings and identity, read once at start from the environment (docs/agent.md,
 * 'Where the files go, and who is who'): rank, local rank, world size and job from
 * the launcher nearest the process (torchrun, Open MPI, PMI, Slurm in a job
 * step, RINGSIDE_RANK), and the job folder under RINGSIDE_OUT. */
#include "preload/agent.h"
#include "formats/trace.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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

/* src into dst (cap bytes), cut to fit. */
static void copy_str(char *dst, size_t cap, const char *src)
{
    size_t n = strnlen(src, cap - 1);
    memcpy(dst, src, n);
    dst[n] = 0;
}

/* v in decimal (out: 24 bytes). */
static void utoa(char *out, unsigned long long v)
{
    char tmp[24];
    int n = 0;
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) && n < 23);
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    out[n] = 0;
}

/* Keeps only characters safe in a file name. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
            *s = '_';
}

/* A job named for one process: host-YYYYMMDD-HHMMSS-pid, at time when, in
 * UTC: the same on every node, and worked out here rather than by gmtime or
 * localtime, which take the C library's time zone lock (a forked child may
 * have it held by no thread, a signal handler may have interrupted its
 * holder) and read the zone's file. Civil date from days since the epoch:
 * the proleptic Gregorian calendar in 400-year eras of 146,097 days. */
static void job_name(char *buf, size_t n, const char *host, int pid, time_t when)
{
    long long secs = when, days = secs / 86400, rem = secs % 86400;
    if (rem < 0) {
        rem += 86400;
        days--;
    }
    long long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    long long doe = z - era * 146097;                               /* [0, 146096] */
    long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);        /* [0, 365], from March 1 */
    long long mp = (5 * doy + 2) / 153;                             /* [0, 11], March = 0 */
    long long day = doy - (153 * mp + 2) / 5 + 1, month = mp < 10 ? mp + 3 : mp - 9;
    long long year = yoe + era * 400 + (month <= 2);
    snprintf(buf, n, "%.200s-%04lld%02lld%02lld-%02lld%02lld%02lld-%d", host, year, month, day, rem / 3600,
             rem / 60 % 60, rem % 60, pid);
}

/* /proc/stat's btime, the boot time in whole seconds; 0 when it cannot be
 * read. Read in pieces: the lines before it (one per CPU, one counter per
 * interrupt) have no bound. */
static long long boot_time(void)
{
    int fd = open("/proc/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    enum { TAIL = 32 };         /* more than "\nbtime " and its number */
    char buf[4096];
    size_t kept = 0;
    long long btime = 0;
    while (!btime) {
        ssize_t r = read(fd, buf + kept, sizeof buf - 1 - kept);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        size_t len = kept + (size_t)r;
        buf[len] = 0;
        const char *p = strstr(buf, "\nbtime ");
        if (p && strchr(p + 7, '\n'))
            btime = strtoll(p + 7, NULL, 10);
        kept = len < TAIL ? len : TAIL;
        memmove(buf, buf + len - kept, kept);
    }
    close(fd);
    return btime;
}

/* When process pid started, in whole seconds since the epoch: the boot time
 * plus its start in clock ticks after boot (field 22 of /proc/PID/stat);
 * both fixed for the process's life, so every process that asks gets the
 * same second. 0 when /proc does not say. */
static time_t proc_started(int pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof buf - 1)) < 0 && errno == EINTR)
        ;
    close(fd);
    if (r <= 0)
        return 0;
    buf[r] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    for (int field = 2; p && field < 22; field++)
        p = strchr(p + 1, ' ');
    long long btime = boot_time();
    long hz = sysconf(_SC_CLK_TCK);
    if (!p || !btime || hz <= 0)
        return 0;
    return (time_t)(btime + (long long)(strtoull(p + 1, NULL, 10) / (unsigned long long)hz));
}

/* The job of a rank that torchrun started with the placeholder run id, in
 * buf. A process a rank starts (a compiler, a data loader) inherits the
 * rank's variables: it takes the job of the rank's claim. The rank itself
 * takes RINGSIDE_JOB where the user set it or where torchrun, traced,
 * named its own job (RINGSIDE_JOB_PID is torchrun's pid: one folder for
 * the launcher and its ranks); else it names the job after torchrun, its
 * parent, with the time torchrun started: every rank of one torchrun gets
 * the same name, two runs two names. */
static const char *torchrun_job(const struct rs_identity *id, char *buf, size_t n)
{
    const char *claim = env("RINGSIDE_RANK_PID");
    char *end = NULL;
    long opid = claim ? strtol(claim, &end, 10) : 0;
    long orank = end && *end == ':' ? strtol(end + 1, &end, 10) : -1;
    int claimed = end && *end == ':' && end[1] && orank == id->rank;
    if (claimed && opid != id->pid) {
        snprintf(buf, n, "%s", end + 1);
        return buf;
    }
    const char *job = env("RINGSIDE_JOB"), *named_by = env("RINGSIDE_JOB_PID");
    if (job && !named_by)
        return job;
    /* torchrun, traced, passed its job on as its pid and time (identity):
     * the same name from the same two */
    const char *named_at = env("RINGSIDE_JOB_TIME");
    if (!job && named_by && named_at && atoi(named_by) == id->ppid) {
        job_name(buf, n, id->host, id->ppid, (time_t)strtoll(named_at, NULL, 10));
        job = buf;
    }
    if (!job || atoi(named_by) != id->ppid) {
        /* without /proc, the pid alone: every rank still names it alike */
        time_t started = proc_started(id->ppid);
        if (started)
            job_name(buf, n, id->host, id->ppid, started);
        else
            snprintf(buf, n, "%.200s-%d", id->host, id->ppid);
        job = buf;
    }
    /* once a job folder: its first local rank, not again after an exec */
    if (id->local_rank == 0 && !claimed && !rs_cfg.disable)
        rs_notice("torchrun gave no run id (TORCHELASTIC_RUN_ID=%s): this run's traces go to %s/%s",
                  getenv("TORCHELASTIC_RUN_ID"), rs_cfg.out, job);
    return job;
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

    /* The launcher nearest the process first: torchrun and mpirun (orted)
     * run inside Slurm allocations and steps, whose variables their ranks
     * inherit (SLURM_PROCID 0 in a batch script, the orted step's task id on
     * other nodes); srun's tasks carry no torchrun or Open MPI variables,
     * and srun --mpi=pmi2 gives PMI_RANK equal to SLURM_PROCID. Slurm's
     * ranks are the tasks of a step: a batch script (SLURM_PROCID 0, no
     * step) and what it runs (srun, mpirun) are not ranks. */
    static const struct { const char *rank, *local, *size, *needs; } launchers[] = {
        { "RANK", "LOCAL_RANK", "WORLD_SIZE", NULL },                        /* torchrun */
        { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE", NULL },
        { "PMI_RANK", "MPI_LOCALRANKID", "PMI_SIZE", NULL },                 /* PMI, MPICH */
        { "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", "SLURM_STEP_ID" },
        { "RINGSIDE_RANK", "RINGSIDE_LOCAL_RANK", "RINGSIDE_WORLD_SIZE", NULL },
    };
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        if (!env(launchers[i].rank) || (launchers[i].needs && !env(launchers[i].needs)))
            continue;
        id->rank = env_int(launchers[i].rank, -1);
        id->local_rank = env_int(launchers[i].local, -1);
        id->world_size = env_int(launchers[i].size, -1);
        break;
    }

    /* The job, from the same nearest launcher. A Slurm process outside any
     * step (a batch script, srun itself there) is the job alone, not step 0.
     * torchrun without --rdzv-id gives its ranks the run id "none": that
     * names no run, and the ranks take one from torchrun itself. */
    char buf[256];
    const char *run = getenv("TORCHELASTIC_RUN_ID");
    int placeholder = run && (!*run || strcmp(run, "none") == 0);
    /* A name the user gave (RINGSIDE_JOB, not passed on by a traced
     * process: no RINGSIDE_JOB_PID beside it) wins over any launcher's: a
     * run id torchrun --standalone makes up would part the ranks from
     * torchrun's own trace. */
    const char *job = env("RINGSIDE_JOB_PID") ? NULL : env("RINGSIDE_JOB");
    if (!job)
        job = placeholder ? torchrun_job(id, buf, sizeof buf) : env("TORCHELASTIC_RUN_ID");
    if (!job)
        job = env("OMPI_MCA_ess_base_jobid");
    if (!job && env("SLURM_JOB_ID")) {
        if (env("SLURM_STEP_ID"))
            snprintf(buf, sizeof buf, "%s.%s", env("SLURM_JOB_ID"), env("SLURM_STEP_ID"));
        else
            snprintf(buf, sizeof buf, "%s", env("SLURM_JOB_ID"));
        job = buf;
    }
    if (!job)
        job = env("PMIX_NAMESPACE");
    if (!job)
        job = env("RINGSIDE_JOB");
    if (!job) {
        /* No launcher: a job for this process tree, passed on so that the
         * processes it starts write to the same folder: RINGSIDE_JOB_PID
         * says which process named it (torchrun_job) and RINGSIDE_JOB_TIME
         * when; a process below such a root names it from the same two.
         * Named here (host-YYYYMMDD-HHMMSS-pid, UTC: job_name reads no time
         * zone). */
        const char *by = env("RINGSIDE_JOB_PID"), *at = env("RINGSIDE_JOB_TIME");
        int root = by && at ? atoi(by) : id->pid;
        time_t when = by && at ? (time_t)strtoll(at, NULL, 10) : time(NULL);
        if (!(by && at)) {
            char pid[24], secs[24];
            utoa(pid, (unsigned long long)id->pid);
            utoa(secs, (unsigned long long)when);
            rs_env_put("RINGSIDE_JOB_PID", pid);
            rs_env_put("RINGSIDE_JOB_TIME", secs);
        }
        job_name(buf, sizeof buf, id->host, root, when);
        job = buf;
    }
    copy_str(id->job, sizeof id->job, job);
    sanitize(id->job);

    /* A process started by a rank (a compiler, a helper script) inherits
     * the rank's environment: the first process to claim a rank of a job
     * marks it ("pid:rank:job"), and later processes with the same rank of
     * the same job are its children. A launcher that a rank runs (torchrun
     * in an srun task) starts ranks of another job, which claim their own. */
    if (id->rank >= 0) {
        const char *owner = env("RINGSIDE_RANK_PID");
        char *end = NULL;
        long opid = owner ? strtol(owner, &end, 10) : 0;
        long orank = end && *end == ':' ? strtol(end + 1, &end, 10) : -1;
        int same = end && *end == ':' && orank == id->rank && strcmp(end + 1, id->job) == 0;
        if (same && opid != id->pid) {
            id->parent_rank = id->rank;
            id->rank = -1;
            id->role = RSF_ROLE_CHILD;
        } else {
            char claim[sizeof id->job + 64];
            snprintf(claim, sizeof claim, "%d:%d:%s", id->pid, id->rank, id->job);
            rs_env_put("RINGSIDE_RANK_PID", claim);
            id->role = RSF_ROLE_RANK;
        }
    }
}

void rs_config_load(int argc, char **argv)
{
    rs_cfg.log = 1; /* a bad RINGSIDE_LOG itself gets its notice */
    rs_cfg.log = (int)env_long("RINGSIDE_LOG", 1, 0, 2);
    rs_cfg.disable = env_flag("RINGSIDE_DISABLE", 0);
    rs_cfg.io = env_flag("RINGSIDE_IO", 1);
    rs_cfg.cuda = env_flag("RINGSIDE_CUDA", 1);
    rs_cfg.nccl = env_flag("RINGSIDE_NCCL", 1);
    gpu_timing();
    rs_cfg.sample_hz = (int)env_long("RINGSIDE_SAMPLE_HZ", 99, 0, 100000);
    rs_cfg.buffer_bytes = (size_t)env_long("RINGSIDE_BUFFER_MB", 64, 1, 1 << 20) << 20;
    rs_cfg.flush_ms = (unsigned)env_long("RINGSIDE_FLUSH_MS", 1000, 10, 3600 * 1000);
    rs_cfg.wait_us = env_long("RINGSIDE_WAIT_US", 1000, 0, 3600L * 1000000);
    rs_cfg.gpu_stack_every = env_long("RINGSIDE_GPU_STACK_EVERY", 10, 0, 1000000000);
    rs_cfg.mem_stack_mb = env_long("RINGSIDE_MEM_STACK_MB", 16, 0, 1L << 30);
    rs_cfg.mem_sample_mb = env_long("RINGSIDE_MEM_SAMPLE_MB", 512, 0, 1L << 30);
    rs_cfg.hang_s = env_long("RINGSIDE_HANG_S", 60, 0, 365L * 86400);
    rs_cfg.own_fds = env_flag("RINGSIDE_OWN_FDS", 1);
    rs_cfg.test_skew = env("RINGSIDE_TEST_CLOCK_SKEW_US") != NULL;
    rs_cfg.test_skew_us = env_long("RINGSIDE_TEST_CLOCK_SKEW_US", 0, -3600L * 1000000, 3600L * 1000000);
    rs_cfg.test_no_tsc = env_flag("RINGSIDE_TEST_NO_TSC", 0);
    rs_cfg.test_gpu_raw_start = env_flag("RINGSIDE_TEST_GPU_RAW_START", 0);
    rs_cfg.metrics_hz = (int)env_long("RINGSIDE_METRICS_HZ", 10, 0, 1000);
    copy_str(rs_cfg.test_sysfs, sizeof rs_cfg.test_sysfs, env("RINGSIDE_TEST_SYSFS") ? env("RINGSIDE_TEST_SYSFS") : "");
    const char *ex = getenv("RINGSIDE_IO_EXCLUDE"); /* set but empty: exclude nothing */
    copy_str(rs_cfg.exclude, sizeof rs_cfg.exclude, ex ? ex : "/proc:/sys:/dev");
    copy_str(rs_cfg.series, sizeof rs_cfg.series, env("RINGSIDE_SERIES") ? env("RINGSIDE_SERIES") : "");

    const char *out = env("RINGSIDE_OUT");
    if (!out)
        out = "ringside-trace";
    if (out[0] == '/' || !getcwd(rs_cfg.out, sizeof rs_cfg.out))
        copy_str(rs_cfg.out, sizeof rs_cfg.out, out);
    else {
        size_t n = strlen(rs_cfg.out);
        if (n + 1 < sizeof rs_cfg.out) {
            rs_cfg.out[n] = '/';
            copy_str(rs_cfg.out + n + 1, sizeof rs_cfg.out - n - 1, out);
        }
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
    static char vals[15][64];
    static const char *const names[] = {
        "io", "cuda", "nccl", "gpu_timing", "sample_hz", "buffer_mb", "flush_ms", "log",
        "wait_us", "gpu_stack_every", "own_fds", "hang_s", "mem_stack_mb", "mem_sample_mb", "io_exclude",
    };
    snprintf(vals[0], 64, "%d", rs_cfg.io);
    snprintf(vals[1], 64, "%d", rs_cfg.cuda);
    snprintf(vals[2], 64, "%d", rs_cfg.nccl);
    snprintf(vals[3], 64, "%d", rs_cfg.gpu_timing);
    snprintf(vals[4], 64, "%d", rs_cfg.sample_hz);
    snprintf(vals[5], 64, "%zu", rs_cfg.buffer_bytes >> 20);
    snprintf(vals[6], 64, "%u", rs_cfg.flush_ms);
    snprintf(vals[7], 64, "%d", rs_cfg.log);
    snprintf(vals[8], 64, "%ld", rs_cfg.wait_us);
    snprintf(vals[9], 64, "%ld", rs_cfg.gpu_stack_every);
    snprintf(vals[10], 64, "%d", rs_cfg.own_fds);
    snprintf(vals[11], 64, "%ld", rs_cfg.hang_s);
    snprintf(vals[12], 64, "%ld", rs_cfg.mem_stack_mb);
    snprintf(vals[13], 64, "%ld", rs_cfg.mem_sample_mb);
    int n = 0;
    for (; n < 14 && n < max; n++) {
        keys[n] = names[n];
        values[n] = vals[n];
    }
    if (n < max) {
        keys[n] = names[14];
        values[n] = rs_cfg.exclude;
        n++;
    }
    if (n < max && rs_cfg.series[0]) {
        keys[n] = "series";
        values[n] = rs_cfg.series;
        n++;
    }
    return n;
}
