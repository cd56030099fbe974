/* The symbols file of `ringside symbols` (sympack.h): written line by line
 * as the symboliser's cache is walked, read back whole with every field
 * checked, so that a damaged or foreign file gets a message naming its
 * line, never a crash. */
#include "reporter/load/sympack.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char magic[] = "ringside-symbols";

/* Writes s with \\, \t and \n escaped. */
static void put_escaped(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '\t')
            fputs("\\t", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

int rsr_sympack_write_head(FILE *f)
{
    return fprintf(f, "%s\t%d\n", magic, RSR_SYMPACK_VERSION) < 0 ? -1 : 0;
}

int rsr_sympack_write_mod(FILE *f, const char *state, const char *build_id, const char *path,
                          const struct rsr_sympack_load *loads, uint32_t nloads)
{
    fprintf(f, "M\t%s\t%s\t", state, build_id ? build_id : "");
    put_escaped(f, path);
    fputc('\n', f);
    for (uint32_t i = 0; i < nloads && i < RSR_SYMPACK_MAXLOADS; i++)
        fprintf(f, "L\t%" PRIx64 "\t%" PRIx64 "\t%" PRIx64 "\n", loads[i].offset, loads[i].vaddr,
                loads[i].filesz);
    return ferror(f) ? -1 : 0;
}

int rsr_sympack_write_addr(FILE *f, uint64_t addr, const struct rsr_sym_result *r)
{
    if (!r->known) {
        fprintf(f, "U\t%" PRIx64 "\t", addr);
        put_escaped(f, r->why ? r->why : "no symbols");
        fputc('\n', f);
        return ferror(f) ? -1 : 0;
    }
    fprintf(f, "A\t%" PRIx64 "\n", addr);
    for (uint32_t i = 0; i < r->nlevels; i++) {
        fprintf(f, "F\t%d\t", r->levels[i].line);
        put_escaped(f, r->levels[i].func);
        fputc('\t', f);
        put_escaped(f, r->levels[i].file);
        fputc('\n', f);
    }
    return ferror(f) ? -1 : 0;
}

/* Splits line at tabs into at most max fields, unescaping each in place.
 * Returns the count, or -1 on a bad escape. */
static int split(char *line, char **field, int max)
{
    int n = 0;
    char *w = line, *r = line;
    field[n++] = w;
    for (; *r; r++) {
        if (*r == '\t') {
            *w++ = '\0';
            if (n == max)
                return -1;
            field[n++] = w;
        } else if (*r == '\\') {
            r++;
            if (*r == '\\')
                *w++ = '\\';
            else if (*r == 't')
                *w++ = '\t';
            else if (*r == 'n')
                *w++ = '\n';
            else
                return -1;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return n;
}

static int parse_hex(const char *s, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 16);
    if (errno || end == s || *end || *s == '-' || *s == '+' || *s == ' ')
        return -1;
    *v = x;
    return 0;
}

static int is_build_id(const char *s)
{
    size_t n = strlen(s);
    if (n % 2 || n > 128)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

static const char *keep(struct rsr_sympack *p, const char *s)
{
    return rsr_intern_str(&p->strs, rsr_intern(&p->strs, s));
}

static int by_addr(const void *a, const void *b)
{
    const struct rsr_sympack_addr *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The levels being read for the last A line (NULL when none). */
struct reading {
    struct rsr_sym_level *levels;
    uint32_t n;
};

static void close_addr(struct rsr_sympack_mod *m, struct reading *rd)
{
    if (m && m->naddrs && rd->levels) {
        struct rsr_sym_result *r = &m->addrs[m->naddrs - 1].res;
        r->levels = rsr_xrealloc(rd->levels, rd->n * sizeof *rd->levels);
        r->nlevels = rd->n;
    }
    rd->levels = NULL;
    rd->n = 0;
}

static const char *parse_line(struct rsr_sympack *p, char *line, struct reading *rd)
{
    char *fd[5];
    int n = split(line, fd, 5);
    if (n < 0)
        return "bad escape or too many fields";
    struct rsr_sympack_mod *m = p->nmods ? &p->mods[p->nmods - 1] : NULL;
    const char *t = fd[0];
    if (t[0] && t[1])
        return "unknown record";
    if (*t != 'F') {
        if (rd->levels && rd->n == 0)
            return "an A record without F records";
        close_addr(m, rd);
    }
    switch (*t) {
    case 'M': {
        if (n != 4)
            return "an M record has 4 fields";
        int ok = strcmp(fd[1], "ok") == 0;
        if (!ok && strcmp(fd[1], "missing") && strcmp(fd[1], "changed"))
            return "module state is not ok, missing or changed";
        if (!is_build_id(fd[2]))
            return "build id is not lowercase hex";
        if (!fd[3][0])
            return "module without a path";
        if (p->nmods == p->capmods) {
            p->capmods = p->capmods ? p->capmods * 2 : 16;
            p->mods = rsr_xrealloc(p->mods, p->capmods * sizeof *p->mods);
        }
        m = &p->mods[p->nmods++];
        memset(m, 0, sizeof *m);
        m->ok = ok;
        m->why = ok ? NULL : fd[1][0] == 'm' ? "file not found where the symbols were packed"
                                              : "build id differs where the symbols were packed";
        m->build_id = keep(p, fd[2]);
        m->path = keep(p, fd[3]);
        return NULL;
    }
    case 'L': {
        struct rsr_sympack_load l;
        if (!m)
            return "an L record before any M record";
        if (n != 4 || parse_hex(fd[1], &l.offset) || parse_hex(fd[2], &l.vaddr) || parse_hex(fd[3], &l.filesz))
            return "an L record has 3 hex numbers";
        if (m->nloads == RSR_SYMPACK_MAXLOADS)
            return "too many L records for one module";
        m->loads[m->nloads++] = l;
        return NULL;
    }
    case 'A':
    case 'U': {
        uint64_t a;
        if (!m)
            return "an address before any M record";
        if (n != (*t == 'A' ? 2 : 3) || parse_hex(fd[1], &a))
            return *t == 'A' ? "an A record has one hex address" : "a U record has a hex address and a reason";
        if (m->naddrs == m->capaddrs) {
            m->capaddrs = m->capaddrs ? m->capaddrs * 2 : 64;
            m->addrs = rsr_xrealloc(m->addrs, m->capaddrs * sizeof *m->addrs);
        }
        struct rsr_sympack_addr *e = &m->addrs[m->naddrs++];
        memset(e, 0, sizeof *e);
        e->addr = a;
        if (*t == 'U') {
            e->res.why = keep(p, fd[2][0] ? fd[2] : "no symbols");
        } else {
            e->res.known = 1;
            rd->levels = rsr_xcalloc(RSR_SYMPACK_MAXLEVELS, sizeof *rd->levels);
        }
        return NULL;
    }
    case 'F': {
        if (!rd->levels)
            return "an F record not after an A record";
        char *end;
        errno = 0;
        long line_no = strtol(fd[1], &end, 10);
        if (n != 4 || errno || *end || end == fd[1] || line_no < 0 || line_no > 0x7fffffff)
            return "an F record has a line number, a function and a file";
        if (!fd[2][0])
            return "an F record without a function name";
        if (rd->n == RSR_SYMPACK_MAXLEVELS)
            return "too many F records for one address";
        rd->levels[rd->n++] = (struct rsr_sym_level){ keep(p, fd[2]), fd[3][0] ? keep(p, fd[3]) : NULL,
                                                       (int)line_no };
        return NULL;
    }
    default:
        return "unknown record";
    }
}

int rsr_sympack_read(const char *path, struct rsr_sympack *p)
{
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "ringside: %s: %s\n", path, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    unsigned long no = 0;
    const char *err = NULL;
    struct reading rd = { 0 };
    while (!err && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        if (len > 0 && line[len - 1] == '\n')
            line[--len] = '\0';
        if ((size_t)len != strlen(line)) {
            err = "a NUL byte in the line";
        } else if (no == 1) {
            char head[64];
            snprintf(head, sizeof head, "%s\t%d", magic, RSR_SYMPACK_VERSION);
            if (strncmp(line, magic, strlen(magic)) != 0)
                err = "not a symbols file of ringside symbols";
            else if (strcmp(line, head) != 0)
                err = "a symbols file of another version (this ringside reads version 1)";
        } else {
            err = parse_line(p, line, &rd);
        }
    }
    if (!err && ferror(f))
        err = strerror(errno ? errno : EIO);
    if (!err && no == 0)
        err = "empty: not a symbols file of ringside symbols";
    if (!err && rd.levels && rd.n == 0)
        err = "ends with an A record without F records";
    if (!err)
        close_addr(p->nmods ? &p->mods[p->nmods - 1] : NULL, &rd);
    free(rd.levels);
    free(line);
    fclose(f);
    if (err) {
        fprintf(stderr, "ringside: %s:%lu: %s\n", path, no, err);
        rsr_sympack_free(p);
        return -1;
    }
    for (uint32_t i = 0; i < p->nmods; i++)
        qsort(p->mods[i].addrs, p->mods[i].naddrs, sizeof *p->mods[i].addrs, by_addr);
    return 0;
}

void rsr_sympack_free(struct rsr_sympack *p)
{
    for (uint32_t i = 0; i < p->nmods; i++) {
        for (uint32_t k = 0; k < p->mods[i].naddrs; k++)
            free((void *)p->mods[i].addrs[k].res.levels);
        free(p->mods[i].addrs);
    }
    free(p->mods);
    rsr_intern_free(&p->strs);
    memset(p, 0, sizeof *p);
}

const struct rsr_sympack_mod *rsr_sympack_find(const struct rsr_sympack *p, const char *path,
                                               const char *build_id)
{
    for (uint32_t i = 0; i < p->nmods; i++) {
        const struct rsr_sympack_mod *m = &p->mods[i];
        if (build_id && build_id[0] ? strcasecmp(m->build_id, build_id) == 0
                                    : !m->build_id[0] && strcmp(m->path, path) == 0)
            return m;
    }
    return NULL;
}

const struct rsr_sympack_addr *rsr_sympack_addr(const struct rsr_sympack_mod *m, uint64_t addr)
{
    uint32_t lo = 0, hi = m->naddrs;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (m->addrs[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->naddrs && m->addrs[lo].addr == addr ? &m->addrs[lo] : NULL;
}
