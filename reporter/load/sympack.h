/* The symbols file of `ringside symbols` ("packs"): for each module the
 * traces' frames hit, keyed by build id, its loadable segments and the
 * symbols of those addresses only, so that a trace can be reported where
 * the traced files are not. Written and read here; symbolize.c uses it.
 *
 * Format (text, UTF-8 as the names are, one record a line, fields split by
 * tabs; in names and paths \\ \t \n stand for backslash, tab, newline):
 *   ringside-symbols<TAB>1            the first line: magic and version
 *   M state build_id path             a module: state ok, missing or changed
 *                                     (as found where it was packed),
 *                                     build_id hex or empty, the traced path
 *   L offset vaddr filesz             a PT_LOAD segment of the module (hex)
 *   A addr                            an address (hex, the file's own space)
 *   F line func file                  one level of A, outermost first; file
 *                                     empty when unknown, line 0
 *   U addr why                        an address with no symbol, and why
 * L, A and U lines belong to the M line above them, F lines to the A line.
 * A reader refuses another version or magic, and names the line of any
 * record it cannot parse. */
#ifndef RSR_SYMPACK_H
#define RSR_SYMPACK_H

#include <stdint.h>
#include <stdio.h>

#include "reporter/base/intern.h"

/* One level of a native frame. An address inside inlined code gives several:
 * the out-of-line function first, then each inlined callee, the innermost
 * last. file is the source file (full path as compiled), line its line: the
 * address's own for the innermost level, the call site for the others;
 * NULL and 0 where there is no line information. Strings are owned by the
 * symboliser and live as long as it. */
struct rsr_sym_level {
    const char *func;
    const char *file;
    int line;
};

struct rsr_sym_result {
    uint32_t nlevels;             /* 1 at least */
    const struct rsr_sym_level *levels;
    int known;                    /* 0: levels[0].func is the "[name+0xoff]" fallback */
    const char *why;              /* known 0: why it has no name ("no symbols") */
};

/* The state of an ELF file as the symboliser found it. */
enum rsr_sym_file_state {
    RSR_SYM_FILE_OK,
    RSR_SYM_FILE_MISSING,     /* cannot be opened, or is not an ELF file */
    RSR_SYM_FILE_CHANGED      /* its build id is not the one the trace recorded */
};

#define RSR_SYMPACK_VERSION 1
#define RSR_SYMPACK_MAXLOADS 32
#define RSR_SYMPACK_MAXLEVELS 256

struct rsr_sympack_load {
    uint64_t offset, vaddr, filesz;
};

struct rsr_sympack_addr {
    uint64_t addr;
    struct rsr_sym_result res;    /* levels in pack-owned memory */
};

struct rsr_sympack_mod {
    const char *path, *build_id;  /* build_id "" when none */
    int ok;                       /* the file was there, with its build id */
    const char *why;              /* when not ok: what was found */
    struct rsr_sympack_load loads[RSR_SYMPACK_MAXLOADS];
    uint32_t nloads;
    struct rsr_sympack_addr *addrs;  /* sorted by addr */
    uint32_t naddrs, capaddrs;
};

struct rsr_sympack {
    struct rsr_sympack_mod *mods;
    uint32_t nmods, capmods;
    struct rsr_intern strs;       /* every name and path */
};

/* Reads the symbols file at path into p (zeroed first). Returns 0, or -1
 * after one line on stderr: "ringside: FILE:LINE: what" for a bad record,
 * or why the file cannot be read. Free with rsr_sympack_free. */
int rsr_sympack_read(const char *path, struct rsr_sympack *p);
void rsr_sympack_free(struct rsr_sympack *p);

/* The module of p with build_id (when not empty), else with path; NULL. */
const struct rsr_sympack_mod *rsr_sympack_find(const struct rsr_sympack *p, const char *path,
                                               const char *build_id);

/* The entry of addr in m, or NULL when the pack does not hold it. */
const struct rsr_sympack_addr *rsr_sympack_addr(const struct rsr_sympack_mod *m, uint64_t addr);

/* Writers: the first line, a module with its segments, one address. Each
 * returns 0, or -1 on a write error (errno set). */
int rsr_sympack_write_head(FILE *f);
int rsr_sympack_write_mod(FILE *f, const char *state, const char *build_id, const char *path,
                          const struct rsr_sympack_load *loads, uint32_t nloads);
int rsr_sympack_write_addr(FILE *f, uint64_t addr, const struct rsr_sym_result *r);

#endif
