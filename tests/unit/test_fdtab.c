/* Unit tests of the agent's fd table (preload/fdtab.c): which fds the I/O
 * hooks record and under which file id, and the OPEN and FILE records that
 * name them, read back from the ring. The paths are held against the
 * kernel's own (/proc/self/fd links, getcwd), the kinds of fd against what
 * the test created (files, a pipe, a socket pair, /proc), the local-file
 * mark against fstatfs, the table's size against RLIMIT_NOFILE. */
#include "rs_agent_unit.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/wait.h>

static void agent_up(const char *exclude)
{
    rs_cfg.buffer_bytes = 4u << 20;
    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "%s", exclude);
    rs_fdtab_init();
    ck_assert_int_eq(rs_agent_start(), 0);
}

/* The path the kernel gives for fd. */
static const char *kernel_path(int fd, char *buf)
{
    char link[64];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, buf, PATH_MAX - 1);
    ck_assert_int_gt(n, 0);
    buf[n] = 0;
    return buf;
}

/* The OPEN or FILE record of d naming file id, or NULL. */
static const struct rs_rec_open *record_of(const struct drained *d, uint32_t id)
{
    size_t off = 0;
    const struct rs_rec_hdr *h;
    while ((h = drained_next(d, &off, NULL)))
        if ((h->kind == RS_REC_OPEN || h->kind == RS_REC_FILE) && h->file == id)
            return (const void *)h;
    return NULL;
}

static int temp_file(char *path, const char *dir)
{
    snprintf(path, PATH_MAX, "%s/rs_unit_fdtab_XXXXXX", dir);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    return fd;
}

/* Files open before the table is set up (a shell's redirections) are named
 * in FILE records; pipes are not files; /proc is excluded by default. */
START_TEST(files_open_at_start)
{
    char path[PATH_MAX], kpath[PATH_MAX];
    int file = temp_file(path, "/tmp");
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    int proc = open("/proc/self/stat", O_RDONLY);
    ck_assert_int_ge(proc, 0);
    agent_up("/proc:/sys:/dev");

    uint32_t id = rs_fd_file(file);
    ck_assert_uint_ne(id, 0);
    ck_assert_uint_eq(rs_fd_entry(p[0]), 0);
    ck_assert_uint_eq(rs_fd_entry(p[1]), 0);
    ck_assert_uint_eq(rs_fd_entry(proc), RS_FILE_EXCLUDED);
    ck_assert_uint_eq(rs_fd_file(proc), 0);

    struct drained d = { 0 };
    drain_into(&d);
    const struct rs_rec_open *r = record_of(&d, id);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->h.kind, RS_REC_FILE);
    ck_assert_str_eq(r->path, kernel_path(file, kpath));
    ck_assert_int_eq(r->result, file);
    ck_assert_int_eq(r->flags, fcntl(file, F_GETFL));
    ck_assert_uint_eq(r->dir, 0);
    /* every record names a different file */
    size_t off = 0;
    const struct rs_rec_hdr *h;
    while ((h = drained_next(&d, &off, NULL)))
        ck_assert(h->file != id || (const void *)h == (const void *)r);
    drained_free(&d);
    unlink(path);
}
END_TEST

/* Before the agent starts there is no table: a call on an fd of a file
 * the hooks record (one the process inherited) starts it, and the fd then
 * has the file's entry; a pipe, an excluded file or a bad fd start nothing
 * and are looked at once until the fd is made anew; a file opened by path
 * starts it only when its path is recorded. */
START_TEST(dormant_until_a_recorded_file)
{
    char path[PATH_MAX], kpath[PATH_MAX];
    int p[2];
    ck_assert_int_eq(pipe(p), 0);
    int proc = open("/proc/self/stat", O_RDONLY);
    ck_assert_int_ge(proc, 0);
    rs_cfg.buffer_bytes = 4u << 20;
    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "%s", "/proc:/sys:/dev");
    rs_fdtab_init();
    ck_assert_uint_eq(rs_hot.fdtab_n, 0);

    ck_assert_uint_eq(rs_fd_dormant(p[0]), 0);
    ck_assert_uint_eq(rs_fd_dormant(proc), 0);
    ck_assert_uint_eq(rs_fd_dormant(-1), 0);
    ck_assert_int_eq(agent_starts, 0);
    /* an open by path of an excluded file starts nothing either */
    ck_assert_uint_eq(rs_file_opened(RSF_IO_OPEN, AT_FDCWD, "/proc/self/stat", O_RDONLY, proc, 1, 2), 0);
    ck_assert_int_eq(agent_starts, 0);

    /* the pipe's number made a file's: looked at again */
    int file = temp_file(path, "/tmp");
    ck_assert_int_eq(dup2(file, p[0]), p[0]);
    ck_assert_uint_eq(rs_fd_dormant(p[0]), 0); /* looked at already: not again */
    rs_fd_set(p[0], 0);                        /* what the dup2 hook does */
    uint32_t e = rs_fd_dormant(p[0]);
    ck_assert_int_eq(agent_starts, 1);
    ck_assert_uint_ne(e & ~RS_FILE_PLAIN, 0);
    ck_assert_uint_eq(e, rs_fd_entry(p[0]));
    ck_assert_uint_ne(rs_fd_file(file), 0);

    /* the start named the file in FILE records, as files open at start */
    struct drained d = { 0 };
    drain_into(&d);
    const struct rs_rec_open *r = record_of(&d, e & ~RS_FILE_PLAIN);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->h.kind, RS_REC_FILE);
    ck_assert_str_eq(r->path, kernel_path(p[0], kpath));
    drained_free(&d);
    unlink(path);
}
END_TEST

/* A relative open names the absolute path the kernel resolved, from the
 * directory as it stands after a chdir; times, flags and result as given. */
START_TEST(opened_relative_to_cwd)
{
    char dir1[] = "/tmp/rs_unit_cwd1_XXXXXX", dir2[] = "/tmp/rs_unit_cwd2_XXXXXX", kpath[PATH_MAX];
    ck_assert_ptr_nonnull(mkdtemp(dir1));
    ck_assert_ptr_nonnull(mkdtemp(dir2));
    ck_assert_int_eq(chdir(dir1), 0);
    agent_up("/proc:/sys:/dev");

    int flags = O_CREAT | O_WRONLY | O_CLOEXEC;
    int a = open("./a.txt", flags, 0600);
    ck_assert_int_ge(a, 0);
    uint32_t ida = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, "./a.txt", flags, a, 100, 250);
    ck_assert_int_eq(chdir(dir2), 0);
    rs_cwd_changed();
    int b = open("b.txt", flags, 0600);
    ck_assert_int_ge(b, 0);
    uint32_t idb = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, "b.txt", flags, b, 300, 301);
    ck_assert_uint_ne(ida, 0);
    ck_assert_uint_ne(idb, 0);
    ck_assert_uint_ne(ida, idb);
    ck_assert_uint_eq(rs_fd_file(a), ida);
    ck_assert_uint_eq(rs_fd_file(b), idb);

    struct drained d = { 0 };
    drain_into(&d);
    const struct rs_rec_open *r = record_of(&d, ida);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(r->h.kind, RS_REC_OPEN);
    ck_assert_int_eq(r->h.op, RSF_IO_OPEN);
    ck_assert_str_eq(r->path, kernel_path(a, kpath));
    ck_assert_uint_eq(r->start_ns, 100);
    ck_assert_uint_eq(r->dur_ns, 150);
    ck_assert_int_eq(r->result, a);
    ck_assert_int_eq(r->flags, flags);
    r = record_of(&d, idb);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(r->path, kernel_path(b, kpath));
    drained_free(&d);

    /* the local-file mark where fstatfs says tmpfs (a file in /dev/shm,
     * recorded once /dev is not excluded) */
    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "%s", "/proc");
    char shm[PATH_MAX];
    struct statfs sf;
    int s = temp_file(shm, "/dev/shm");
    ck_assert_int_eq(fstatfs(s, &sf), 0);
    if ((uint32_t)sf.f_type == TMPFS_MAGIC) {
        uint32_t id = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, shm, O_RDWR, s, 0, 0);
        ck_assert_uint_eq(rs_fd_entry(s), id | RS_FILE_PLAIN);
    }
    unlink(shm);
    unlink(kernel_path(a, kpath));
    unlink(kernel_path(b, kpath));
    ck_assert_int_eq(chdir("/"), 0);
    rmdir(dir1);
    rmdir(dir2);
}
END_TEST

/* openat: a path relative to a recorded directory names it by its id; one
 * relative to an excluded directory is excluded. /proc, recorded when
 * nothing is excluded, is no local file. */
START_TEST(opened_relative_to_dir)
{
    char dir[] = "/tmp/rs_unit_dir_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    agent_up("/proc");
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(dfd, 0);
    uint32_t did = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, dir, O_RDONLY | O_DIRECTORY, dfd, 0, 0);
    ck_assert_uint_ne(did, 0);
    int f = openat(dfd, "c.txt", O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(f, 0);
    uint32_t fid = rs_file_opened(RSF_IO_OPENAT, dfd, "c.txt", O_CREAT | O_RDWR, f, 0, 0);
    ck_assert_uint_ne(fid, 0);

    int pdir = open("/proc/self", O_RDONLY | O_DIRECTORY);
    ck_assert_int_ge(pdir, 0);
    ck_assert_uint_eq(rs_file_opened(RSF_IO_OPEN, AT_FDCWD, "/proc/self", O_RDONLY, pdir, 0, 0), 0);
    ck_assert_uint_eq(rs_fd_entry(pdir), RS_FILE_EXCLUDED);
    int st = openat(pdir, "stat", O_RDONLY);
    ck_assert_int_ge(st, 0);
    ck_assert_uint_eq(rs_file_opened(RSF_IO_OPENAT, pdir, "stat", O_RDONLY, st, 0, 0), 0);
    ck_assert_uint_eq(rs_fd_entry(st), RS_FILE_EXCLUDED);

    struct drained d = { 0 };
    drain_into(&d);
    const struct rs_rec_open *r = record_of(&d, fid);
    ck_assert_ptr_nonnull(r);
    ck_assert_uint_eq(r->dir, did);
    ck_assert_str_eq(r->path, "c.txt");
    ck_assert_int_eq(r->h.op, RSF_IO_OPENAT);
    /* nothing opened is recorded for the excluded ones: only the two files
     * (the others are FILE records of what was open at start) */
    size_t off = 0, opens = 0;
    const struct rs_rec_hdr *h;
    while ((h = drained_next(&d, &off, NULL)))
        opens += h->kind == RS_REC_OPEN;
    ck_assert_uint_eq(opens, 2);
    drained_free(&d);

    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "%s", "");
    int sys = open("/proc/self/status", O_RDONLY);
    ck_assert_int_ge(sys, 0);
    struct statfs sf;
    ck_assert_int_eq(fstatfs(sys, &sf), 0);
    ck_assert_uint_eq((uint32_t)sf.f_type, PROC_SUPER_MAGIC);
    uint32_t pid = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, "/proc/self/status", O_RDONLY, sys, 0, 0);
    ck_assert_uint_ne(pid, 0);
    ck_assert_uint_eq(rs_fd_entry(sys), pid); /* not marked local */

    unlinkat(dfd, "c.txt", 0);
    rmdir(dir);
}
END_TEST

/* RINGSIDE_IO_EXCLUDE: prefixes by whole path components. */
START_TEST(excluded_prefixes)
{
    agent_up("/data/skip:/tmp/x/:/ex");
    static const struct { const char *path; int excluded; } cases[] = {
        { "/data/skip", 1 }, { "/data/skip/f", 1 }, { "/data/skipped", 0 }, { "/data", 0 },
        { "/tmp/x", 1 }, { "/tmp/x/y", 1 }, { "/tmp/xy", 0 }, { "/ex/a", 1 }, { "/exa", 0 },
        { "/other", 0 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ck_assert_msg(rs_io_excluded(cases[i].path) == cases[i].excluded, "%s", cases[i].path);
    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "/");
    ck_assert(rs_io_excluded("/any/thing"));
    snprintf(rs_cfg.exclude, sizeof rs_cfg.exclude, "%s", "");
    ck_assert(!rs_io_excluded("/proc/self/stat"));
}
END_TEST

START_TEST(wait_reasons)
{
    agent_up("/proc:/sys:/dev");
    int p[2], s[2];
    char path[PATH_MAX];
    ck_assert_int_eq(pipe(p), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, s), 0);
    int f = temp_file(path, "/tmp");
    ck_assert_int_eq(rs_fd_reason(p[0]), RSF_WAIT_PIPE);
    ck_assert_int_eq(rs_fd_reason(p[1]), RSF_WAIT_PIPE);
    ck_assert_int_eq(rs_fd_reason(s[0]), RSF_WAIT_SOCKET);
    ck_assert_int_eq(rs_fd_reason(f), RSF_WAIT_FILE);
    close(p[0]);
    ck_assert_int_eq(rs_fd_reason(p[0]), RSF_WAIT_FILE); /* closed: no better word */
    unlink(path);
}
END_TEST

/* The table reaches every fd the process may open (RLIMIT_NOFILE, up to
 * its cap); beyond it, nothing is recorded and nothing breaks. A thread
 * with its own fd table leaves the program's alone. */
START_TEST(covers_every_fd)
{
    struct rlimit rl;
    ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
    agent_up("/proc:/sys:/dev");
    rlim_t cap = 1u << 22, want = rl.rlim_cur < cap ? rl.rlim_cur : cap;
    ck_assert_uint_ge(rs_hot.fdtab_n, want);

    char path[PATH_MAX];
    int f = temp_file(path, "/tmp");
    int high = (int)want - 1;
    ck_assert_int_eq(dup2(f, high), high);
    uint32_t id = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, path, O_RDWR, high, 0, 0);
    ck_assert_uint_ne(id, 0);
    ck_assert_uint_eq(rs_fd_file(high), id);

    ck_assert_uint_eq(rs_fd_entry(-1), 0);
    ck_assert_uint_eq(rs_fd_entry((int)rs_hot.fdtab_n), 0);
    rs_fd_set(-1, 5);
    rs_fd_set((int)rs_hot.fdtab_n, 5);

    rs_own_fds = 1;
    rs_fd_set(high, 0);
    ck_assert_uint_eq(rs_fd_file(high), id);
    rs_own_fds = 0;
    rs_fd_set(high, 0);
    ck_assert_uint_eq(rs_fd_entry(high), 0);
    unlink(path);
}
END_TEST

/* A forked child (its ring started afresh) names the files it inherited
 * under the ids its table holds, with the paths the kernel gives. */
START_TEST(forked_child_names_inherited)
{
    agent_up("/proc:/sys:/dev");
    char path[PATH_MAX];
    int f = temp_file(path, "/tmp");
    uint32_t id = rs_file_opened(RSF_IO_OPEN, AT_FDCWD, path, O_RDWR, f, 0, 0);
    ck_assert_uint_ne(id, 0);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        /* no ck_assert here: the exit status says what went wrong */
        char kpath[PATH_MAX], link[64];
        rs_ring_reset();
        rs_fdtab_forked();
        struct drained d = { 0 };
        drain_into(&d);
        const struct rs_rec_open *r = record_of(&d, id);
        snprintf(link, sizeof link, "/proc/self/fd/%d", f);
        ssize_t n = readlink(link, kpath, sizeof kpath - 1);
        kpath[n > 0 ? n : 0] = 0;
        if (!r)
            _exit(2);
        if (r->h.kind != RS_REC_FILE || strcmp(r->path, kpath) != 0 || r->result != f)
            _exit(3);
        _exit(0);
    }
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %d", status);
    unlink(path);
}
END_TEST

static Suite *fdtab_suite(void)
{
    const struct rs_test tests[] = {
        { "fdtab_files_open_at_start", files_open_at_start },
        { "fdtab_dormant_until_a_recorded_file", dormant_until_a_recorded_file },
        { "fdtab_opened_relative_to_cwd", opened_relative_to_cwd },
        { "fdtab_opened_relative_to_dir", opened_relative_to_dir },
        { "fdtab_excluded_prefixes", excluded_prefixes },
        { "fdtab_wait_reasons", wait_reasons },
        { "fdtab_covers_every_fd", covers_every_fd },
        { "fdtab_forked_child_names_inherited", forked_child_names_inherited },
    };
    return RS_SUITE("fdtab", tests, 30);
}

RS_CHECK_MAIN(fdtab_suite)
