/* Names of processes and of the job on the page (html_names.h). What a
 * process is comes from its command line and its parent's: a multiprocessing
 * child of a Python rank (a fork that kept the rank's argv, a spawn_main
 * child, or a fork of the rank's forkserver) is a DataLoader worker; the
 * forkserver and resource tracker say so in their argv; any other child is
 * named by its program. */
#include "reporter/out/html_names.h"
#include "reporter/out/html_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NAME_MAX_LEN 128
#define DOT " \xc2\xb7 "   /* U+00B7, the page's separator */

struct named {
    yajl_val v, argv;
    const char *host;
    double pid, ppid, rank, prank;
    int launcher;               /* the parent of a rank */
    char name[NAME_MAX_LEN];
};

struct rsr_html_names {
    struct named *p;
    size_t n;
};

static const char *word(yajl_val argv, size_t i)
{
    yajl_val w = rsr_jv_at(argv, i);
    return YAJL_IS_STRING(w) ? YAJL_GET_STRING(w) : NULL;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int is_python(yajl_val argv)
{
    const char *a0 = word(argv, 0);
    return a0 && strncmp(base(a0), "python", 6) == 0;
}

static int argv_has(yajl_val argv, const char *text)
{
    for (size_t i = 0; i < rsr_jv_len(argv); i++)
        if (word(argv, i) && strstr(word(argv, i), text))
            return 1;
    return 0;
}

static int same_argv(yajl_val a, yajl_val b)
{
    if (!rsr_jv_len(a) || rsr_jv_len(a) != rsr_jv_len(b))
        return 0;
    for (size_t i = 0; i < rsr_jv_len(a); i++)
        if (!word(a, i) || !word(b, i) || strcmp(word(a, i), word(b, i)) != 0)
            return 0;
    return 1;
}

/* multiprocessing's helper processes, which run its modules by -c. */
static const char *helper(yajl_val argv)
{
    if (argv_has(argv, "multiprocessing.forkserver"))
        return "forkserver";
    if (argv_has(argv, "multiprocessing.resource_tracker"))
        return "resource tracker";
    return NULL;
}

/* The program a command line runs: a Python interpreter's script or -m
 * module (torchrun is a script), else the executable's name; "" for none. */
static const char *program(yajl_val argv)
{
    const char *a0 = word(argv, 0);
    if (!a0)
        return "";
    if (!is_python(argv))
        return base(a0);
    for (size_t i = 1; i < rsr_jv_len(argv); i++) {
        const char *w = word(argv, i);
        if (!w)
            break;
        if (strcmp(w, "-m") == 0 && word(argv, i + 1))
            return word(argv, i + 1);
        if (strcmp(w, "-c") == 0)
            break;
        if (w[0] != '-')
            return base(w);
    }
    return base(a0);
}

static const char *host_of(yajl_val v)
{
    const char *h = rsr_jv_kstr(v, "host");
    return h ? h : "";
}

/* The process of pid on host, or NULL. */
static const struct named *by_pid(const struct rsr_html_names *n, double pid, const char *host)
{
    for (size_t i = 0; i < n->n; i++)
        if (n->p[i].pid == pid && strcmp(n->p[i].host, host) == 0)
            return &n->p[i];
    return NULL;
}

/* What a rank's child is. */
static const char *child_what(const struct rsr_html_names *n, const struct named *c)
{
    /* a fork keeps its parent's argv: the forkserver's forks read as it */
    const struct named *parent = by_pid(n, c->ppid, c->host);
    const char *ph = parent ? helper(parent->argv) : NULL;
    if (is_python(c->argv) &&
        (argv_has(c->argv, "--multiprocessing-fork") ||
         (parent && (same_argv(c->argv, parent->argv) || (ph && strcmp(ph, "forkserver") == 0)))))
        return "DataLoader worker";
    const char *h = helper(c->argv);
    if (h)
        return h;
    return *program(c->argv) ? program(c->argv) : "child";
}

static void name_one(const struct rsr_html_names *n, struct named *x)
{
    const char *role = rsr_jv_kstr(x->v, "role"), *prog = program(x->argv), *h = helper(x->argv);
    if (x->rank >= 0)
        snprintf(x->name, sizeof x->name, "rank %.0f", x->rank);
    else if (x->prank >= 0 && role && strcmp(role, "child") == 0)
        snprintf(x->name, sizeof x->name, "rank %.0f" DOT "%s", x->prank, child_what(n, x));
    else if (x->launcher && *prog)
        snprintf(x->name, sizeof x->name, "%s" DOT "launcher", prog);
    else if (x->launcher)
        snprintf(x->name, sizeof x->name, "pid %.0f" DOT "launcher", x->pid);
    else if (h || *prog)
        snprintf(x->name, sizeof x->name, "pid %.0f" DOT "%s", x->pid, h ? h : prog);
    else if (x->pid >= 0)
        snprintf(x->name, sizeof x->name, "pid %.0f", x->pid);
    else
        snprintf(x->name, sizeof x->name, "process");
}

struct rsr_html_names *rsr_html_names_read(yajl_val root)
{
    yajl_val procs = rsr_jv_key(root, "processes");
    struct rsr_html_names *n = calloc(1, sizeof *n);
    size_t len = rsr_jv_len(procs);
    if (!n || (len && !(n->p = calloc(len, sizeof *n->p)))) {
        free(n);
        errno = ENOMEM;
        return NULL;
    }
    n->n = len;
    for (size_t i = 0; i < len; i++) {
        struct named *x = &n->p[i];
        x->v = rsr_jv_at(procs, i);
        x->argv = rsr_jv_key(x->v, "argv");
        x->host = host_of(x->v);
        x->pid = rsr_jv_knum_or(x->v, "pid", -1);
        x->ppid = rsr_jv_knum_or(x->v, "ppid", -1);
        x->rank = rsr_jv_knum_or(x->v, "rank", -1);
        x->prank = rsr_jv_knum_or(x->v, "parent_rank", -1);
    }
    for (size_t i = 0; i < len; i++) {
        struct named *parent = (struct named *)by_pid(n, n->p[i].ppid, n->p[i].host);
        if (n->p[i].rank >= 0 && parent && parent->rank < 0)
            parent->launcher = 1;
    }
    for (size_t i = 0; i < len; i++)
        name_one(n, &n->p[i]);
    return n;
}

void rsr_html_names_free(struct rsr_html_names *n)
{
    if (!n)
        return;
    free(n->p);
    free(n);
}

const char *rsr_html_name(const struct rsr_html_names *n, yajl_val proc)
{
    for (size_t i = 0; n && i < n->n; i++)
        if (n->p[i].v == proc)
            return n->p[i].name;
    double pid, rank;
    if (n && rsr_jv_knum(proc, "pid", &pid)) {
        /* an object that names no host (ends_early[]): the pid alone */
        const struct named *x = rsr_jv_kstr(proc, "host") ? by_pid(n, pid, host_of(proc)) : NULL;
        const char *any = rsr_jv_kstr(proc, "host") ? NULL : rsr_html_name_pid(n, pid);
        if (x || any)
            return x ? x->name : any;
    }
    if (n && rsr_jv_knum(proc, "rank", &rank) && rank >= 0)
        for (size_t i = 0; i < n->n; i++)
            if (n->p[i].rank == rank)
                return n->p[i].name;
    return NULL;
}

const char *rsr_html_name_pid(const struct rsr_html_names *n, double pid)
{
    for (size_t i = 0; n && i < n->n; i++)
        if (n->p[i].pid == pid)
            return n->p[i].name;
    return NULL;
}

void rsr_html_proc(FILE *f, const struct rsr_html_names *n, yajl_val proc)
{
    const char *name = rsr_html_name(n, proc);
    double r, pid;
    if (name)
        rsr_html_text(f, name);
    else if (rsr_jv_knum(proc, "rank", &r))
        fprintf(f, "rank %.0f", r);
    else if (rsr_jv_knum(proc, "pid", &pid))
        fprintf(f, "pid %.0f", pid);
    else
        fputs("process", f);
}

/* The pid at the end of a name the agent made up for a job with no name
 * of its own (preload/config.c): HOST-YYYYMMDD-HHMMSS-PID or HOST-PID,
 * with HOST one of the processes' hosts; -1 when job is not one. */
static double made_up_pid(const struct rsr_html_names *n, const char *job)
{
    for (size_t i = 0; i < n->n; i++) {
        size_t hl = strlen(n->p[i].host);
        if (!hl || strncmp(job, n->p[i].host, hl) != 0 || job[hl] != '-')
            continue;
        const char *s = job + hl + 1, *digits = "0123456789";
        size_t a = strspn(s, digits);
        if (a == 8 && s[8] == '-' && strspn(s + 9, digits) == 6 && s[15] == '-')
            s += 16;
        size_t d = strspn(s, digits);
        if (d && d < 12 && !s[d])
            return strtod(s, NULL);
    }
    return -1;
}

void rsr_html_title(const struct rsr_html_names *n, yajl_val root, char *b, size_t len)
{
    const char *job = rsr_jv_kstr(root, "job");
    double namer = job && *job ? made_up_pid(n, job) : -1;
    if (job && *job && strcmp(job, "none") != 0 && namer < 0) {
        snprintf(b, len, "%s", job);
        return;
    }
    /* Whose job: the process that named it, else the launcher of the
     * ranks, else the first process (a rank, where there are ranks). */
    const struct named *who = NULL;
    for (size_t i = 0; i < n->n && !who; i++)
        if (n->p[i].pid == namer)
            who = &n->p[i];
    for (size_t i = 0; i < n->n && !who; i++)
        if (n->p[i].launcher)
            who = &n->p[i];
    if (!who && n->n)
        who = &n->p[0];
    const char *prog = who ? program(who->argv) : "";
    int at = snprintf(b, len, "%s%sjob", prog, *prog ? " " : "");
    double start_us;
    /* a start on the wall clock: after 2001 */
    if (at > 0 && (size_t)at < len && rsr_jv_knum(root, "start_us", &start_us) && start_us > 1e15) {
        time_t t = (time_t)(start_us / 1e6);
        struct tm tm;
        if (gmtime_r(&t, &tm))
            snprintf(b + at, len - (size_t)at, DOT "%04d-%02d-%02d %02d:%02d UTC", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min);
    }
}
