/* Which fds the I/O hooks record, and under which file id. A file id is
 * given at open and names the path once, in an OPEN (or FILE) record; every
 * later read or write carries only the id. Excluded paths (RINGSIDE_IO_EXCLUDE)
 * and fds that are not files (pipes, sockets) are not recorded (their
 * reads and writes make wait samples only: hook_io.c). */
#include "preload/agent.h"
#include "formats/trace.h"

#include <dirent.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

static _Atomic uint32_t next_file = 1;

/* The current directory, for relative paths; a generation count lets a
 * reader notice that a chdir raced with its copy. */
static char cwd[PATH_MAX];
static _Atomic unsigned cwd_gen;

__thread int rs_own_fds RS_TLS;

/* fds rs_fd_dormant has looked at (one bit each, the first 64k), until
 * they are closed or made anew. */
#define LOOKED_FDS 65536u
static _Atomic uint64_t looked[LOOKED_FDS / 64];

void rs_fd_set(int fd, uint32_t entry)
{
    if (fd >= 0 && (size_t)fd < LOOKED_FDS && !rs_own_fds)
        atomic_fetch_and_explicit(&looked[fd / 64], ~(1ull << (fd % 64)), memory_order_relaxed);
    if (fd >= 0 && (size_t)fd < rs_hot.fdtab_n && !rs_own_fds)
        atomic_store_explicit(&rs_hot.fdtab[fd], entry, memory_order_relaxed);
}

/* A new file id (0 once all below RS_FILE_PLAIN are given out). */
static uint32_t new_id(void)
{
    uint32_t id = atomic_fetch_add_explicit(&next_file, 1, memory_order_relaxed);
    return id < RS_FILE_PLAIN ? id : 0;
}

#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC 0x2fc12fc1 /* OpenZFS's, not in the kernel's headers */
#endif

/* Whether fd is a regular file on a file system whose reads and writes
 * wait for nothing but local storage or memory. Network file systems, FUSE
 * (a user-space server), /proc, /sys and the like can block a call for as
 * long as something else decides, which a cancellation must be able to
 * interrupt. */
static int on_local_fs(int fd)
{
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0)
        return 0;
    switch ((uint32_t)sf.f_type) {
    case EXT4_SUPER_MAGIC: /* also ext2 and ext3 */
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case F2FS_SUPER_MAGIC:
    case ZFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
    case RAMFS_MAGIC:
    case OVERLAYFS_SUPER_MAGIC:
    case SQUASHFS_MAGIC:
        return 1;
    default:
        return 0;
    }
}

int rs_fd_reason(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return RSF_WAIT_FILE;
    return S_ISFIFO(st.st_mode) ? RSF_WAIT_PIPE : S_ISSOCK(st.st_mode) ? RSF_WAIT_SOCKET : RSF_WAIT_FILE;
}

/* fd's table entry for file id: the id, marked RS_FILE_PLAIN for a block
 * device or a regular file on a local file system (on_local_fs). */
static uint32_t entry_for(int fd, uint32_t id)
{
    struct stat st;
    if (fstat(fd, &st) == 0 && (S_ISBLK(st.st_mode) || (S_ISREG(st.st_mode) && on_local_fs(fd))))
        return id | RS_FILE_PLAIN;
    return id;
}

void rs_cwd_changed(void)
{
    if (!rs_hot.fdtab)
        return; /* not started: the start reads it */
    char buf[PATH_MAX];
    if (!getcwd(buf, sizeof buf))
        buf[0] = 0;
    atomic_fetch_add_explicit(&cwd_gen, 1, memory_order_acq_rel);
    memcpy(cwd, buf, sizeof cwd);
    atomic_fetch_add_explicit(&cwd_gen, 1, memory_order_release);
}

int rs_io_excluded(const char *path)
{
    const char *p = rs_cfg.exclude;
    while (*p) {
        const char *end = strchr(p, ':');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        while (n > 1 && p[n - 1] == '/')
            n--;
        if (n && strncmp(path, p, n) == 0 && (path[n] == '/' || path[n] == 0 || (n == 1 && p[0] == '/')))
            return 1;
        if (!end)
            break;
        p = end + 1;
    }
    return 0;
}

/* Writes the absolute form of path into out (size PATH_MAX) when it can be
 * known here: absolute already, or relative to the current directory.
 * Returns 1 if out is absolute. */
static int absolute(int dirfd, const char *path, char *out)
{
    size_t n = strlen(path);
    if (path[0] == '/' || dirfd != AT_FDCWD) {
        if (n >= PATH_MAX)
            n = PATH_MAX - 1;
        memcpy(out, path, n);
        out[n] = 0;
        return path[0] == '/';
    }
    while (path[0] == '.' && path[1] == '/')
        path += 2, n -= 2;
    for (int tries = 0; tries < 3; tries++) {
        unsigned g = atomic_load_explicit(&cwd_gen, memory_order_acquire);
        if (g & 1)
            continue;
        size_t c = strnlen(cwd, PATH_MAX - 1);
        if (c + 1 + n >= PATH_MAX)
            break;
        memcpy(out, cwd, c);
        out[c] = '/';
        memcpy(out + c + 1, path, n + 1);
        if (atomic_load_explicit(&cwd_gen, memory_order_acquire) == g)
            return 1;
    }
    snprintf(out, PATH_MAX, "%s", path);
    return 0;
}

/* Appends an OPEN or FILE record naming file id for path. */
static void record_path(int kind, int op, uint32_t id, uint32_t dir, const char *path, int flags,
                        int64_t result, uint64_t t0, uint64_t t1)
{
    size_t n = strlen(path) + 1;
    size_t size = (sizeof(struct rs_rec_open) + n + 7) & ~(size_t)7;
    int g = rs_guard_hold();
    struct rs_rec_open *r = rs_reserve(size, kind);
    if (!r) {
        rs_guard_restore(g);
        return;
    }
    r->h.size = (uint16_t)size;
    r->h.kind = (uint8_t)kind;
    r->h.op = (uint8_t)op;
    r->h.file = id;
    r->start_ns = t0;
    r->dur_ns = t1 - t0;
    r->result = result;
    r->flags = flags;
    r->dir = dir;
    memcpy(r->path, path, n);
    rs_commit(size);
    rs_guard_restore(g);
}

/* fd_path's check before the agent has started: whether fd names a file
 * (an absolute path) that is not excluded. */
static int recordable(int fd);

uint32_t rs_file_opened(int op, int dirfd, const char *path, int flags, int fd, uint64_t t0,
                        uint64_t t1)
{
    char abs[PATH_MAX];
    uint32_t dir = 0;
    /* The first file opened that is recorded starts the agent, whose table
     * then holds the current directory and the files open so far. */
    if (!atomic_load_explicit(&rs_hot.started, memory_order_relaxed) && (fd < 0 || !recordable(fd) ||
                                                                          rs_agent_start() != 0))
        return 0;

    int is_abs = absolute(dirfd, path ? path : "", abs);
    if (!is_abs && dirfd != AT_FDCWD) {
        dir = rs_fd_entry(dirfd);
        if (dir == RS_FILE_EXCLUDED) {
            rs_fd_set(fd, RS_FILE_EXCLUDED);
            return 0;
        }
        dir &= ~RS_FILE_PLAIN;
    }
    uint32_t id = 0;
    if ((is_abs && rs_io_excluded(abs)) || !(id = new_id())) {
        rs_fd_set(fd, RS_FILE_EXCLUDED);
        return 0;
    }
    record_path(RS_REC_OPEN, op, id, dir, abs, flags, fd, t0, t1);
    rs_fd_set(fd, entry_for(fd, id));
    return id;
}

/* The path fd names, read back from the kernel into target (PATH_MAX
 * bytes). Returns 1, or 0 when it is not a file with an absolute path (a
 * pipe, a socket, a deleted or unreadable link). */
static int fd_path(int fd, char *target)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, PATH_MAX - 1);
    if (n <= 0 || target[0] != '/')
        return 0;
    target[n] = 0;
    return 1;
}

static int recordable(int fd)
{
    char target[PATH_MAX];
    return fd_path(fd, target) && !rs_io_excluded(target);
}

uint32_t rs_fd_dormant(int fd)
{
    if (fd < 0 || (size_t)fd >= LOOKED_FDS || !rs_hot.io_active)
        return 0;
    uint64_t bit = 1ull << (fd % 64);
    if (atomic_fetch_or_explicit(&looked[fd / 64], bit, memory_order_relaxed) & bit)
        return 0;
    if (!recordable(fd) || rs_agent_start() != 0)
        return 0;
    return rs_fd_entry(fd);
}

void rs_fdtab_init(void)
{
    rs_hot.io_active = 1;
}

int rs_fdtab_start(void)
{
    if (rs_hot.fdtab)
        return 0;
    struct rlimit rl;
    size_t n = 1u << 16;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max != RLIM_INFINITY && rl.rlim_max > n)
        n = rl.rlim_max < (1u << 22) ? rl.rlim_max : (1u << 22);
    void *p = mmap(NULL, n * sizeof *rs_hot.fdtab, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return -1;
    /* Other threads read the table as soon as its size says so: the table
     * and the current directory first. */
    rs_hot.fdtab = p;
    rs_cwd_changed();
    atomic_thread_fence(memory_order_release);
    rs_hot.fdtab_n = n;

    /* Files the program was started with (a shell's redirections). */
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return 0;
    int own = dirfd(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == own)
            continue;
        char target[PATH_MAX];
        if (!fd_path(fd, target))
            continue;
        uint32_t id = 0;
        if (rs_io_excluded(target) || !(id = new_id())) {
            rs_fd_set(fd, RS_FILE_EXCLUDED);
            continue;
        }
        int fl = fcntl(fd, F_GETFL);
        uint64_t now = rs_ticks();
        record_path(RS_REC_FILE, RSF_IO_OPEN, id, 0, target, fl, fd, now, now);
        rs_fd_set(fd, entry_for(fd, id));
    }
    closedir(d);
    return 0;
}

void rs_fdtab_forked(void)
{
    if (!rs_hot.fdtab)
        return; /* the parent had not started: nor has the child */
    /* The child's new file must name the files it inherited under the ids
     * its fd table still holds; the paths are read back from the kernel
     * rather than from the parent's writer state, which fork may have caught
     * mid-update. Names alone do not make the child write a file. */
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return;
    int own = dirfd(d);
    struct dirent *e;
    uint64_t now = rs_ticks();
    while ((e = readdir(d))) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] == '.' || fd == own || rs_writer_owns_fd(fd))
            continue;
        uint32_t id = rs_fd_file(fd);
        if (id == 0)
            continue;
        char target[PATH_MAX];
        if (!fd_path(fd, target))
            continue;
        record_path(RS_REC_FILE, RSF_IO_OPEN, id, 0, target, fcntl(fd, F_GETFL), fd, now, now);
    }
    closedir(d);
}
