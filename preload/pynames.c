/* How the writer names a Python frame, from what pyframes.c reads of the
 * code object: the file by its path below the sys.path entry it was
 * imported from (as py-spy and the PyTorch profiler show it), and the line
 * an instruction is at, decoded from co_linetable (3.10's pairs or the
 * location table of 3.11+). Writer side only: it stats and mallocs. */
#include "preload/sample.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The agent cannot ask the interpreter for sys.path (that needs the GIL),
 * so the entry a module came from is inferred from the file system, the way
 * the import system found it: a regular package is a folder with an
 * __init__.py, and its top folder sits in a sys.path entry, so the root is
 * the first folder up from the file's own that has no __init__.py. A
 * namespace package (no __init__.py, e.g. google/ of protobuf) would make
 * that root too deep, so where a site-packages or dist-packages folder, the
 * standard library's lib/pythonX.Y or a .zip/.egg archive is that folder or
 * lies above it, the nearest such one is the root. A script's folder is
 * sys.path[0]: `python /abs/dir/train.py` names train.py. Known misses: a
 * script in a folder that holds an __init__.py is named from the parent
 * (pkgdir/train.py), and a sys.path entry that itself holds an __init__.py
 * adds its own name. Each folder's root is worked out once. */
struct dir_slot {
    char *dir;            /* NULL: empty */
    size_t len;
    uint64_t hash;
    size_t root;          /* length of the root's path, a prefix of dir */
};

static struct {
    struct dir_slot *slots;
    size_t cap, n;
} dirs;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
    return h;
}

static struct dir_slot *dir_find(const char *dir, size_t len, uint64_t h)
{
    size_t j = h & (dirs.cap - 1);
    for (; dirs.slots[j].dir; j = (j + 1) & (dirs.cap - 1)) {
        struct dir_slot *d = &dirs.slots[j];
        if (d->hash == h && d->len == len && memcmp(d->dir, dir, len) == 0)
            break;
    }
    return &dirs.slots[j];
}

/* Remembers dir's root; a full or failed table just forgets. */
static void dir_remember(const char *dir, size_t len, uint64_t h, size_t root)
{
    if (dirs.n + 1 >= dirs.cap / 2) {
        size_t cap = dirs.cap ? dirs.cap * 2 : 256;
        struct dir_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return;
        for (size_t i = 0; i < dirs.cap; i++) {
            if (!dirs.slots[i].dir)
                continue;
            size_t j = dirs.slots[i].hash & (cap - 1);
            while (t[j].dir)
                j = (j + 1) & (cap - 1);
            t[j] = dirs.slots[i];
        }
        free(dirs.slots);
        dirs.slots = t;
        dirs.cap = cap;
    }
    struct dir_slot *d = dir_find(dir, len, h);
    char *copy = d->dir ? NULL : malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, dir, len);
    copy[len] = 0;
    *d = (struct dir_slot){ copy, len, h, root };
    dirs.n++;
}

static int name_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

/* Whether path component s[0..n), whose parent component is p[0..pn),
 * is where imports start whatever lies below it (see above). */
static int is_path_root(const char *s, size_t n, const char *p, size_t pn)
{
    if (name_is(s, n, "site-packages") || name_is(s, n, "dist-packages"))
        return 1;
    if (n > 4 && (memcmp(s + n - 4, ".zip", 4) == 0 || memcmp(s + n - 4, ".egg", 4) == 0))
        return 1;
    if (!(name_is(p, pn, "lib") || name_is(p, pn, "lib64")) || n < 9 || memcmp(s, "python", 6) != 0)
        return 0;
    size_t i = 6, digits = 0; /* pythonX.Y, or X.Yt for a free-threaded build */
    while (i < n && s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (!digits || i == n || s[i++] != '.')
        return 0;
    for (digits = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++)
        digits++;
    return digits && (i == n || (i + 1 == n && s[i] == 't'));
}

/* The nearest path root at or above folder dir[0..len), or len. */
static size_t marked_root(const char *dir, size_t len)
{
    size_t end = len;
    while (end > 0) {
        size_t start = end;
        while (start > 0 && dir[start - 1] != '/')
            start--;
        size_t pend = start ? start - 1 : 0, pstart = pend;
        while (pstart > 0 && dir[pstart - 1] != '/')
            pstart--;
        if (is_path_root(dir + start, end - start, dir + pstart, pend - pstart))
            return end;
        end = pend;
    }
    return len;
}

static int has_init(const char *dir, size_t len)
{
    char p[4096];
    static const char init[] = "/__init__.py";
    struct stat st;
    if (len + sizeof init > sizeof p)
        return 0;
    memcpy(p, dir, len);
    memcpy(p + len, init, sizeof init);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The root of folder dir[0..len) ("" is /): the length of its path. */
static size_t dir_root(const char *dir, size_t len)
{
    uint64_t h = hash_bytes(dir, len);
    if (dirs.cap) {
        const struct dir_slot *d = dir_find(dir, len, h);
        if (d->dir)
            return d->root;
    }
    size_t root;
    if (len > 0 && has_init(dir, len)) {
        size_t up = len - 1;
        while (up > 0 && dir[up] != '/')
            up--;
        root = dir_root(dir, up);
    } else {
        root = marked_root(dir, len);
    }
    dir_remember(dir, len, h, root);
    return root;
}

const char *rs_py_relpath(const char *file)
{
    const char *slash = strrchr(file, '/');
    if (file[0] != '/' || !slash)
        return file; /* "<frozen os>", "<string>", a name compile() was given */
    size_t root = dir_root(file, (size_t)(slash - file));
    return file + root + 1;
}

void rs_py_names_reset(void)
{
    /* In a forked child: the parent's writer may have been changing the
     * table, so it is dropped, not freed. */
    memset(&dirs, 0, sizeof dirs);
}

/* 3.10's co_linetable: (bytes of bytecode, signed line delta) pairs from
 * co_firstlineno; a delta of -128 marks bytes with no line. */
static int line_310(const uint8_t *t, size_t n, int line, uint32_t unit)
{
    uint32_t at = unit * 2, end = 0;
    for (size_t i = 0; i + 1 < n; i += 2) {
        uint32_t start = end;
        int delta = (int8_t)t[i + 1];
        end += t[i];
        if (delta != -128)
            line += delta;
        if (at >= start && at < end)
            return delta == -128 ? -1 : line;
    }
    return -1;
}

/* A location table varint: 6-bit groups, low first, bit 6 set on all but
 * the last. */
static uint32_t varint(const uint8_t *t, size_t n, size_t *i)
{
    uint32_t v = 0;
    for (unsigned shift = 0; *i < n && shift < 32; shift += 6) {
        uint8_t b = t[(*i)++];
        v |= (uint32_t)(b & 63) << shift;
        if (!(b & 64))
            break;
    }
    return v;
}

static int svarint(const uint8_t *t, size_t n, size_t *i)
{
    uint32_t v = varint(t, n, i);
    return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/* The location table of 3.11+: entries of a first byte (bit 7 set, a kind
 * in bits 3-6, code units covered - 1 in bits 0-2) and the kind's operands;
 * start lines are deltas from the entry before, from co_firstlineno. Kinds:
 * 0-9 short (same line, one column byte), 10-12 one line (delta kind - 10,
 * two column bytes), 13 no columns (svarint delta), 14 long (svarint delta
 * and three varints), 15 no location. */
static int line_311(const uint8_t *t, size_t n, int line, uint32_t unit)
{
    uint32_t at = 0;
    size_t i = 0;
    while (i < n) {
        uint8_t b = t[i++];
        if (!(b & 0x80))
            return -1;
        unsigned kind = (b >> 3) & 15, len = (b & 7) + 1;
        if (kind == 14) {
            line += svarint(t, n, &i);
            for (int k = 0; k < 3; k++)
                varint(t, n, &i);
        } else if (kind == 13) {
            line += svarint(t, n, &i);
        } else if (kind >= 10 && kind <= 12) {
            line += (int)kind - 10;
            i += 2;
        } else if (kind < 10) {
            i += 1;
        }
        if (unit < at + len)
            return kind == 15 ? -1 : line;
        at += len;
    }
    return -1;
}

int rs_py_line(const uint8_t *table, size_t n, int first, uint32_t unit, unsigned minor)
{
    return minor == 10 ? line_310(table, n, first, unit) : line_311(table, n, first, unit);
}
