/* The node's own counters (docs/agent.md, 'The node: links, storage, CPU'): one
 * process per node, elected with a lock in the job folder, samples the
 * InfiniBand/RoCE ports, network interfaces, block devices, NFS mounts, CPU
 * and memory at RINGSIDE_METRICS_HZ on a thread of its own, as series and
 * points (series.c) in its trace file; the reporter merges a host's series
 * across the files of the processes that held the lock in turn (nodes.c).
 *
 * The election: every traced process that has a trace file of its own (so
 * that `true`, or a launcher that touches nothing, an srun task among them,
 * leave no file for the node's sake: a process takes part from its first
 * chunk on, half a flush period after its first event) tries flock(LOCK_EX | LOCK_NB) on <out>/<job>/.node-<host>.lock, again
 * about once a second while another holds it; the lock goes with the
 * holder's death, so a node is never without a sampler for more than a
 * second and never has two. The thread has its own fd table (as the writer,
 * writer.c), so the lock is out of the program's reach and a forked child
 * holds no copy of it; the child starts a thread of its own, not elected.
 * At exit the process takes a last sample (or, when nobody holds the lock
 * any more, takes it for that sample), so the node's counters are read
 * after the job's last bytes moved.
 *
 * RINGSIDE_TEST_SYSFS=DIR (tests only): every path below is read under DIR
 * instead of /: DIR/sys/class/infiniband/<dev>/ports/<n>/{rate,link_layer,
 * counters/port_xmit_data,counters/port_rcv_data}, DIR/sys/class/net/<if>/
 * {type,speed,statistics/tx_bytes,statistics/rx_bytes}, DIR/sys/block/<disk>
 * (a folder per whole disk, slaves/ inside for stacked ones),
 * DIR/proc/{diskstats,stat,meminfo,self/mountstats}. */
#include "preload/agent.h"
#include "formats/trace.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define M_PATH 320               /* a counter file's path */
#define M_FILES 96               /* one-value counter files (ports, interfaces) */
#define M_DISKS 32
#define M_MOUNTS 16
#define M_RETRY_NS 1000000000ull /* a process not elected tries again this often */
#define M_FINAL_WAIT_NS 200000000ull
#define M_BUF (64u << 10)
#define M_MOUNTSTATS_BUF (256u << 10)

/* A counter read from a file of its own (a port's or interface's bytes). */
struct mfile {
    char path[M_PATH];
    char name[64];
    uint64_t rate;               /* bytes/s, 0: not known */
    uint32_t scale;              /* bytes per unit of the file's number */
    uint32_t id;                 /* series id (0: not defined) */
    uint8_t kind, link;
};

/* A device or mount read from a table of many (diskstats, mountstats). */
struct mdev {
    char name[64];
    uint32_t id_read, id_write;
};

/* What lives while the process runs (nothing of it goes to disk but the
 * records): the sources found when elected, and the thread's state. */
static struct {
    int hz;
    char root[PATH_MAX];         /* "" or RINGSIDE_TEST_SYSFS */
    struct mfile files[M_FILES];
    int nfiles;
    struct mdev disks[M_DISKS];
    int ndisks;
    struct mdev mounts[M_MOUNTS];
    int nmounts;
    uint32_t id_cpu_busy, id_cpu_total, id_mem_total, id_mem_avail, id_mem_dirty;
    int defined;                 /* series defined in this process's file */
    int lock_fd;                 /* open lock file, -1: none */
    int elected;
    int own;                     /* the thread has its own fd table */
    char buf[M_BUF];
    char *mbuf;                  /* mountstats, M_MOUNTSTATS_BUF */
} M; /* zeroed (.bss, no file pages): lock_fd is set -1 at start */

static pthread_t metrics_thread;
static _Atomic int running;             /* the thread exists */
static _Atomic uint32_t wake;           /* futex word: bumped to wake the thread */
static _Atomic int final_req;           /* rs_metrics_final asks for a last sample */
static _Atomic uint32_t final_done;     /* futex word: the last sample is taken */

static void futex_wait(_Atomic uint32_t *word, uint32_t val, uint64_t ns)
{
    struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, &ts, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word)
{
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT32_MAX, NULL, NULL, 0);
}

/* ---- reading ---- */

/* The whole file (up to n - 1 bytes, NUL added). Returns its length, or -1
 * when it cannot be read. */
static ssize_t read_file(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < n - 1) {
        ssize_t r = read(fd, buf + got, n - 1 - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            if (r < 0)
                got = 0;
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[got] = 0;
    return got ? (ssize_t)got : -1;
}

/* A decimal number at *p (spaces before it skipped; leading zeros are not
 * octal); *p moves past it. Returns 0, or -1 when there is none or it does
 * not fit in 64 bits (a wrapped number would be a made-up figure). */
static int parse_u64(const char **p, uint64_t *v)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t')
        s++;
    if (*s < '0' || *s > '9')
        return -1;
    uint64_t x = 0;
    for (; *s >= '0' && *s <= '9'; s++)
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, (uint64_t)(*s - '0'), &x))
            return -1;
    *p = s;
    *v = x;
    return 0;
}

/* The one number a counter file holds (a newline may follow). */
static int read_u64(const char *path, uint64_t *v)
{
    char b[64];
    if (read_file(path, b, sizeof b) < 0)
        return -1;
    const char *p = b;
    if (parse_u64(&p, v) != 0)
        return -1;
    return *p == 0 || *p == '\n' ? 0 : -1;
}

static const char *next_line(const char *p)
{
    const char *nl = strchr(p, '\n');
    return nl ? nl + 1 : NULL;
}

/* ---- finding the node's sources (once elected; may allocate) ---- */

/* M.root, then parts (up to a NULL), into out. 0, or -1 when too long. */
static int path_cat(char *out, size_t n, const char *const *parts)
{
    size_t k = strnlen(M.root, sizeof M.root);
    if (k >= n)
        return -1;
    memcpy(out, M.root, k);
    for (; *parts; parts++) {
        size_t m = strlen(*parts);
        if (k + m >= n)
            return -1;
        memcpy(out + k, *parts, m);
        k += m;
    }
    out[k] = 0;
    return 0;
}
#define PATH(out, ...) path_cat((out), sizeof(out), (const char *const[]){ __VA_ARGS__, NULL })

/* s into a name field of n bytes, cut if longer. */
static void copy_name(char *dst, size_t n, const char *s)
{
    size_t k = strnlen(s, n - 1);
    memcpy(dst, s, k);
    dst[k] = 0;
}

static int is_entry(const struct dirent *d)
{
    return d->d_name[0] != '.';
}

static struct mfile *file_add(int kind, int link, const char *name, uint64_t rate, uint32_t scale)
{
    if (M.nfiles == M_FILES)
        return NULL;
    struct mfile *f = &M.files[M.nfiles];
    memset(f, 0, sizeof *f);
    copy_name(f->name, sizeof f->name, name);
    f->kind = (uint8_t)kind;
    f->link = (uint8_t)link;
    f->rate = rate;
    f->scale = scale;
    return f;
}

/* "100 Gb/sec (4X EDR)" as bytes per second (0 when it does not read). */
static uint64_t ib_rate(const char *path)
{
    char b[128];
    if (read_file(path, b, sizeof b) < 0)
        return 0;
    char *end;
    double g = strtod(b, &end);
    /* past 1e6 Gb/s it is no port's rate (and would not fit the bytes) */
    if (end == b || !(g > 0 && g < 1e6) || strncmp(end, " Gb/sec", 7) != 0)
        return 0;
    return (uint64_t)(g * 1e9 / 8);
}

static void find_ib(void)
{
    char dir[M_PATH], ports[M_PATH], p[M_PATH];
    if (PATH(dir, "/sys/class/infiniband") != 0)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_entry(e) || PATH(ports, "/sys/class/infiniband/", e->d_name, "/ports") != 0)
            continue;
        DIR *pd = opendir(ports);
        if (!pd)
            continue;
        struct dirent *pe;
        while ((pe = readdir(pd))) {
            if (!is_entry(pe))
                continue;
            char name[64], layer[32] = "";
            snprintf(name, sizeof name, "%.40s:%.16s", e->d_name, pe->d_name);
            if (PATH(p, "/sys/class/infiniband/", e->d_name, "/ports/", pe->d_name, "/link_layer") == 0)
                read_file(p, layer, sizeof layer);
            int link = strncmp(layer, "Ethernet", 8) == 0 ? RSF_LINK_ROCE : RSF_LINK_IB;
            uint64_t rate = 0;
            if (PATH(p, "/sys/class/infiniband/", e->d_name, "/ports/", pe->d_name, "/rate") == 0)
                rate = ib_rate(p);
            static const char *const files[2] = { "port_xmit_data", "port_rcv_data" };
            for (int k = 0; k < 2; k++) {
                struct mfile *f = file_add(k ? RSF_SERIES_LINK_RX : RSF_SERIES_LINK_TX, link, name, rate, 4);
                if (f && PATH(f->path, "/sys/class/infiniband/", e->d_name, "/ports/", pe->d_name, "/counters/",
                                 files[k]) == 0 && access(f->path, R_OK) == 0)
                    M.nfiles++;
            }
        }
        closedir(pd);
    }
    closedir(d);
}

static void find_net(void)
{
    char dir[M_PATH], p[M_PATH];
    if (PATH(dir, "/sys/class/net") != 0)
        return;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!is_entry(e))
            continue;
        uint64_t type = 0, speed = 0;
        if (PATH(p, "/sys/class/net/", e->d_name, "/type") == 0)
            read_u64(p, &type);
        /* speed: Mb/s; -1 (no link, or a virtual interface) does not read
         * as a number and leaves the rate unknown */
        if (PATH(p, "/sys/class/net/", e->d_name, "/speed") != 0 || read_u64(p, &speed) != 0 ||
            speed > UINT64_MAX / 1000000)
            speed = 0;
        int link = strcmp(e->d_name, "lo") == 0 || type == 772 ? RSF_LINK_LOOPBACK : RSF_LINK_ETH;
        static const char *const files[2] = { "tx_bytes", "rx_bytes" };
        for (int k = 0; k < 2; k++) {
            struct mfile *f = file_add(k ? RSF_SERIES_LINK_RX : RSF_SERIES_LINK_TX, link, e->d_name,
                                       speed * 1000000 / 8, 1);
            if (f && PATH(f->path, "/sys/class/net/", e->d_name, "/statistics/", files[k]) == 0 && access(f->path, R_OK) == 0)
                M.nfiles++;
        }
    }
    closedir(d);
}

/* Whether a device of diskstats is a whole disk that carries its own I/O:
 * listed in /sys/block (partitions are not), with no slaves (device mapper
 * and md sit on other disks, whose I/O would count twice). 1 yes, 0 no,
 * -1 when /sys/block cannot be read at all. */
static int whole_disk(const char *name)
{
    char p[M_PATH], n[64];
    copy_name(n, sizeof n, name);
    for (char *c = n; *c; c++)
        if (*c == '/')
            *c = '!';
    if (PATH(p, "/sys/block") != 0 || access(p, X_OK) != 0)
        return -1;
    if (PATH(p, "/sys/block/", n) != 0 || access(p, F_OK) != 0)
        return 0;
    if (PATH(p, "/sys/block/", n, "/slaves") != 0)
        return 0;
    DIR *d = opendir(p);
    if (!d)
        return 1;
    int slaves = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        slaves += is_entry(e);
    closedir(d);
    return slaves == 0;
}

/* Without /sys/block: a name that is another listed name plus digits
 * (sda1, nvme0n1p2) is a partition. */
static int partition_of_listed(const char *name, const char *table)
{
    size_t n = strlen(name);
    while (n && name[n - 1] >= '0' && name[n - 1] <= '9')
        n--;
    if (n == strlen(name) || n == 0)
        return 0;
    size_t base = n && name[n - 1] == 'p' ? n - 1 : n;
    for (const char *l = table; l; l = next_line(l)) {
        const char *p = l;
        uint64_t x;
        if (parse_u64(&p, &x) != 0 || parse_u64(&p, &x) != 0)
            continue;
        while (*p == ' ')
            p++;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\n')
            e++;
        if (((size_t)(e - p) == n || (size_t)(e - p) == base) && strncmp(p, name, (size_t)(e - p)) == 0)
            return 1;
    }
    return 0;
}

/* The name field of a diskstats line into name; returns the rest of the
 * line, or NULL when the line does not read. */
static const char *disk_name(const char *l, char *name, size_t n)
{
    uint64_t x;
    if (parse_u64(&l, &x) != 0 || parse_u64(&l, &x) != 0)
        return NULL;
    while (*l == ' ')
        l++;
    size_t k = 0;
    while (*l && *l != ' ' && *l != '\n') {
        if (k + 1 < n)
            name[k++] = *l;
        l++;
    }
    name[k] = 0;
    return k ? l : NULL;
}

static int pseudo_disk(const char *name)
{
    return strncmp(name, "loop", 4) == 0 || strncmp(name, "ram", 3) == 0 || strncmp(name, "zram", 4) == 0;
}

static void find_disks(void)
{
    char p[M_PATH];
    if (PATH(p, "/proc/diskstats") != 0 || read_file(p, M.buf, sizeof M.buf) < 0)
        return;
    /* pseudo devices (loop, ram) only when there is nothing else */
    for (int pass = 0; pass < 2 && M.ndisks == 0; pass++)
        for (const char *l = M.buf; l && M.ndisks < M_DISKS; l = next_line(l)) {
            char name[64];
            if (!disk_name(l, name, sizeof name) || pseudo_disk(name) != pass)
                continue;
            int whole = whole_disk(name);
            if (whole == 0 || (whole < 0 && partition_of_listed(name, M.buf)))
                continue;
            copy_name(M.disks[M.ndisks++].name, sizeof M.disks[0].name, name);
        }
}

/* The mount point of a mountstats "device" line of an NFS mount into
 * name; 0, or -1 when the line is not one. */
static int nfs_mount(const char *l, char *name, size_t n)
{
    if (strncmp(l, "device ", 7) != 0)
        return -1;
    const char *eol = strchr(l, '\n');
    size_t len = eol ? (size_t)(eol - l) : strlen(l);
    const char *on = memmem(l, len, " mounted on ", 12);
    const char *with = memmem(l, len, " with fstype nfs", 16);
    if (!on || !with || with < on)
        return -1;
    on += 12;
    size_t k = (size_t)(with - on) < n - 1 ? (size_t)(with - on) : n - 1;
    memcpy(name, on, k);
    name[k] = 0;
    return 0;
}

static ssize_t read_mountstats(void)
{
    char p[M_PATH];
    if (!M.mbuf && !(M.mbuf = malloc(M_MOUNTSTATS_BUF)))
        return -1;
    if (PATH(p, "/proc/self/mountstats") != 0)
        return -1;
    return read_file(p, M.mbuf, M_MOUNTSTATS_BUF);
}

static void find_mounts(void)
{
    if (read_mountstats() < 0)
        return;
    for (const char *l = M.mbuf; l && M.nmounts < M_MOUNTS; l = next_line(l)) {
        char name[64];
        if (nfs_mount(l, name, sizeof name) == 0)
            copy_name(M.mounts[M.nmounts++].name, sizeof M.mounts[0].name, name);
    }
}

/* Finds the sources and defines a series for each, in this process's file
 * (again after a fork: the child's file is new). */
static void define_all(void)
{
    M.nfiles = M.ndisks = M.nmounts = 0;
    find_ib();
    find_net();
    find_disks();
    find_mounts();
    for (int i = 0; i < M.nfiles; i++) {
        struct mfile *f = &M.files[i];
        f->id = rs_series_define(f->kind, f->link, f->name, -1, f->rate);
    }
    for (int i = 0; i < M.ndisks; i++) {
        M.disks[i].id_read = rs_series_define(RSF_SERIES_DISK_READ, RSF_LINK_NONE, M.disks[i].name, -1, 0);
        M.disks[i].id_write = rs_series_define(RSF_SERIES_DISK_WRITE, RSF_LINK_NONE, M.disks[i].name, -1, 0);
    }
    for (int i = 0; i < M.nmounts; i++) {
        M.mounts[i].id_read = rs_series_define(RSF_SERIES_NFS_READ, RSF_LINK_NONE, M.mounts[i].name, -1, 0);
        M.mounts[i].id_write = rs_series_define(RSF_SERIES_NFS_WRITE, RSF_LINK_NONE, M.mounts[i].name, -1, 0);
    }
    M.id_cpu_busy = rs_series_define(RSF_SERIES_CPU_BUSY, RSF_LINK_NONE, "cpu", -1, 0);
    M.id_cpu_total = rs_series_define(RSF_SERIES_CPU_TOTAL, RSF_LINK_NONE, "cpu", -1, 0);
    M.id_mem_total = rs_series_define(RSF_SERIES_MEM_TOTAL, RSF_LINK_NONE, "mem", -1, 0);
    M.id_mem_avail = rs_series_define(RSF_SERIES_MEM_AVAILABLE, RSF_LINK_NONE, "mem", -1, 0);
    M.id_mem_dirty = rs_series_define(RSF_SERIES_MEM_DIRTY, RSF_LINK_NONE, "mem", -1, 0);
    M.defined = 1;
}

/* ---- one sample: no allocation, no stdio; a file that does not read is
 * left out of this sample ---- */

static void sample_files(void)
{
    for (int i = 0; i < M.nfiles; i++) {
        uint64_t v;
        if (read_u64(M.files[i].path, &v) == 0 && v <= UINT64_MAX / M.files[i].scale)
            rs_series_point(M.files[i].id, rs_now(), v * M.files[i].scale);
    }
}

static void sample_disks(void)
{
    char p[M_PATH];
    if (!M.ndisks || PATH(p, "/proc/diskstats") != 0 ||
        read_file(p, M.buf, sizeof M.buf) < 0)
        return;
    uint64_t t = rs_now();
    for (const char *l = M.buf; l; l = next_line(l)) {
        char name[64];
        const char *q = disk_name(l, name, sizeof name);
        if (!q)
            continue;
        for (int i = 0; i < M.ndisks; i++) {
            if (strcmp(name, M.disks[i].name) != 0)
                continue;
            /* reads, merged, sectors read, ms, writes, merged, sectors written */
            uint64_t f[7];
            int k = 0;
            while (k < 7 && parse_u64(&q, &f[k]) == 0)
                k++;
            if (k == 7 && f[2] <= UINT64_MAX / 512 && f[6] <= UINT64_MAX / 512) {
                rs_series_point(M.disks[i].id_read, t, f[2] * 512);
                rs_series_point(M.disks[i].id_write, t, f[6] * 512);
            }
            break;
        }
    }
}

static void sample_mounts(void)
{
    if (!M.nmounts || read_mountstats() < 0)
        return;
    uint64_t t = rs_now();
    int cur = -1;
    for (const char *l = M.mbuf; l; l = next_line(l)) {
        char name[64];
        if (nfs_mount(l, name, sizeof name) == 0) {
            cur = -1;
            for (int i = 0; i < M.nmounts; i++)
                if (strcmp(name, M.mounts[i].name) == 0)
                    cur = i;
            continue;
        }
        if (strncmp(l, "device ", 7) == 0) {
            cur = -1;
            continue;
        }
        const char *q = l;
        while (*q == ' ' || *q == '\t')
            q++;
        if (cur < 0 || strncmp(q, "bytes:", 6) != 0)
            continue;
        /* normal read, normal write, direct read, direct write, server
         * read, server write, pages read, pages written: what crossed
         * the wire is the server's */
        q += 6;
        uint64_t f[6];
        int k = 0;
        while (k < 6 && parse_u64(&q, &f[k]) == 0)
            k++;
        if (k == 6) {
            rs_series_point(M.mounts[cur].id_read, t, f[4]);
            rs_series_point(M.mounts[cur].id_write, t, f[5]);
        }
        cur = -1;
    }
}

static void sample_cpu_mem(void)
{
    char p[M_PATH];
    /* the first line only: user nice system idle iowait irq softirq steal */
    if (PATH(p, "/proc/stat") == 0 && read_file(p, M.buf, 4096) > 0 &&
        strncmp(M.buf, "cpu ", 4) == 0) {
        const char *q = M.buf + 4;
        uint64_t f[8] = { 0 };
        int k = 0;
        while (k < 8 && parse_u64(&q, &f[k]) == 0)
            k++;
        uint64_t busy = 0, total = 0;
        int wrap = 0;
        for (int i = 0; i < 8; i++)
            wrap |= __builtin_add_overflow(total, f[i], &total) ||
                    (i != 3 && i != 4 && __builtin_add_overflow(busy, f[i], &busy));
        if (k >= 4 && !wrap) {
            uint64_t t = rs_now();
            rs_series_point(M.id_cpu_busy, t, busy);
            rs_series_point(M.id_cpu_total, t, total);
        }
    }
    if (PATH(p, "/proc/meminfo") != 0 || read_file(p, M.buf, sizeof M.buf) < 0)
        return;
    uint64_t t = rs_now();
    static const char *const keys[3] = { "MemTotal:", "MemAvailable:", "Dirty:" };
    const uint32_t ids[3] = { M.id_mem_total, M.id_mem_avail, M.id_mem_dirty };
    for (const char *l = M.buf; l; l = next_line(l))
        for (int k = 0; k < 3; k++) {
            size_t n = strlen(keys[k]);
            uint64_t v;
            const char *q = l + n;
            if (strncmp(l, keys[k], n) == 0 && parse_u64(&q, &v) == 0)
                rs_series_point(ids[k], t, v);
        }
}

static void sample(void)
{
    sample_files();
    sample_disks();
    sample_mounts();
    sample_cpu_mem();
}

/* ---- the election ---- */

/* Whether this process takes part: one with a trace file of its own. A
 * launcher or a helper that records nothing stays out and leaves no file
 * for the node's sake. */
static int eligible(void)
{
    return rs_writer_has_file();
}

/* One try for the node's lock. Returns 1 when this process holds it. */
static int try_elect(void)
{
    if (M.lock_fd < 0) {
        char dir[PATH_MAX], path[PATH_MAX + 300];
        int n = snprintf(dir, sizeof dir, "%s/%s", rs_cfg.out, rs_id.job);
        if (n < 0 || (size_t)n >= sizeof dir || rs_mkdirs(dir) != 0)
            return 0;
        snprintf(path, sizeof path, "%s/.node-%s.lock", dir, rs_id.host);
        M.lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (M.lock_fd < 0)
            return 0;
    }
    while (flock(M.lock_fd, LOCK_EX | LOCK_NB) != 0)
        if (errno != EINTR)
            return 0;
    return 1;
}

/* The sampler stops: the lock goes (closing the one fd of its open file
 * releases it), so another process takes over. */
static void step_down(void)
{
    if (M.lock_fd >= 0)
        close(M.lock_fd);
    M.lock_fd = -1;
    M.elected = 0;
}

/* Gives the thread its own copy of the fd table, emptied (as writer.c's
 * own_table), with 0, 1 and 2 on /dev/null. */
static void own_table(void)
{
#ifdef SYS_close_range
    if (syscall(SYS_close_range, ~0u, ~0u, 0) != 0 || unshare(CLONE_FILES) != 0)
        return;
    rs_own_fds = 1;
    M.own = 1;
    syscall(SYS_close_range, 0u, ~0u, 0);
    for (int i = 0; i < 3; i++)
        if (open("/dev/null", O_RDWR | O_CLOEXEC) != i)
            rs_debug("metrics: /dev/null did not take fd %d", i);
#endif
}

/* A last sample at exit: taken by the sampler, or by this process if the
 * node has none any more. */
static void take_final(void)
{
    if (!M.elected && eligible())
        M.elected = try_elect();
    if (M.elected) {
        if (!M.defined)
            define_all();
        sample();
    }
    atomic_store(&final_done, 1);
    futex_wake(&final_done);
}

static void *metrics_main(void *arg)
{
    (void)arg;
    rs_th.guard = 1; /* the sampler's reads are the agent's, never recorded */
    prctl(PR_SET_NAME, "ringside-node", 0, 0, 0);
    own_table();
    uint64_t period = 1000000000ull / (uint64_t)M.hz, next_try = 0, next = rs_now();
    for (;;) {
        uint32_t seen = atomic_load(&wake);
        if (atomic_load(&final_req)) {
            take_final();
            break;
        }
        if (!atomic_load(&rs_hot.on))
            break;
        uint64_t now = rs_now();
        if (!M.elected && now >= next_try && eligible()) {
            M.elected = try_elect();
            next_try = now + M_RETRY_NS;
            if (M.elected && !M.defined)
                define_all();
        }
        if (M.elected)
            sample();
        next += period;
        now = rs_now();
        if (next <= now) /* late (a stopped process, a busy host): no burst to catch up */
            next = now + period;
        if (!M.elected && next < next_try)
            next = next_try; /* not the sampler: nothing to do before the next try */
        futex_wait(&wake, seen, next - now);
    }
    /* Holds the lock while the process ends (it is released with the
     * process); gives it up at once when tracing stopped for good. */
    if (!atomic_load(&final_req))
        step_down();
    atomic_store(&running, 0);
    return NULL;
}

static void start(void)
{
    atomic_store(&running, 1);
    if (rs_thread_start(&metrics_thread, metrics_main, NULL, 128u << 10) != 0) {
        atomic_store(&running, 0);
        rs_notice("cannot start the node metrics thread; node counters are not recorded");
    }
}

static _Atomic int thread_asked;   /* start() called for this process */

void rs_metrics_init(void)
{
    M.lock_fd = -1;
    M.hz = rs_cfg.metrics_hz;
    if (M.hz <= 0)
        return;
    copy_name(M.root, sizeof M.root, rs_cfg.test_sysfs);
}

void rs_metrics_file_opened(void)
{
    if (M.hz > 0 && !atomic_exchange(&thread_asked, 1))
        start();
}

void rs_metrics_forked(void)
{
    if (M.hz <= 0)
        return;
    /* The parent's sampler is not this process's: a copy of its lock fd
     * (only when the thread shared the table) is closed, which leaves the
     * parent's lock alone, and the child starts not elected. */
    if (M.lock_fd >= 0 && !M.own)
        close(M.lock_fd);
    M.lock_fd = -1;
    M.elected = M.defined = M.own = 0;
    atomic_store(&final_req, 0);
    atomic_store(&final_done, 0);
    atomic_store(&running, 0);
    /* the child's thread starts with its own trace file */
    atomic_store(&thread_asked, 0);
}

void rs_metrics_final(void)
{
    if (!atomic_load(&running) || atomic_exchange(&final_req, 1))
        return;
    atomic_fetch_add(&wake, 1);
    futex_wake(&wake);
    uint64_t deadline = rs_now() + M_FINAL_WAIT_NS;
    while (!atomic_load(&final_done) && atomic_load(&running)) {
        uint64_t now = rs_now();
        if (now >= deadline)
            break;
        futex_wait(&final_done, 0, deadline - now < 10000000u ? deadline - now : 10000000u);
    }
}
