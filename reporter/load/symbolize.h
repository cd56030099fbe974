/* Offline symbolisation of native addresses with elfutils (libdwfl): each
 * ELF file a trace names is opened once (with its separate debug info, found
 * through .gnu_debuglink or /usr/lib/debug/.build-id), and each address is
 * looked up once: function, inlined callers, source file and line. The file
 * is taken, in this order, from a symbols file of `ringside symbols`
 * (sympack.h), from under a --sysroot, at its traced path, or by build id
 * from the debuginfod servers of DEBUGINFOD_URLS; build ids are checked. */
#include <stdio.h>

#ifndef RSR_SYMBOLIZE_H
#define RSR_SYMBOLIZE_H

#include <stdint.h>

#include "reporter/load/sympack.h"

struct rsr_sym;

/* Where every symboliser made afterwards looks for the traced files (call
 * once, before any rsr_sym_new): sysroot, a folder the traced paths are
 * looked up under first (a container's root), or NULL; symbols_file, a
 * file of `ringside symbols` consulted before any file, or NULL. Also sets
 * up debuginfod when DEBUGINFOD_URLS is set (DEBUGINFOD_TIMEOUT defaults
 * to 5 s here). Returns 0, or -1 after a line on stderr (the symbols file
 * cannot be read or is not one; the sysroot is not a folder). */
int rsr_sym_configure(const char *sysroot, const char *symbols_file);
void rsr_sym_unconfigure(void);

/* What rsr_sym_configure set (NULL each where not), and whether a
 * debuginfod server failed. */
void rsr_sym_sources(const char **sysroot, const char **symbols_file, const char **urls, int *down);

/* A symboliser with nothing opened yet; NULL when out of memory. quiet: no
 * notices on stderr about missing or changed files (else one line per file). */
struct rsr_sym *rsr_sym_new(int quiet);
void rsr_sym_free(struct rsr_sym *s);

/* The handle (>= 0) of the ELF file at path as the trace saw it: build_id is
 * the hex build id it recorded (NULL or "" when none). Opened on first use;
 * a file that cannot be used still gets a handle, with a state saying why. */
int rsr_sym_file(struct rsr_sym *s, const char *path, const char *build_id);
enum rsr_sym_file_state rsr_sym_file_state(const struct rsr_sym *s, int file);

/* Why file cannot be used, in a few words ("file not found here", "build id
 * differs"); NULL when it can. */
const char *rsr_sym_file_why(const struct rsr_sym *s, int file);

/* Writes what s has looked up, every file with its segments and every
 * address with its levels, as a symbols file (sympack.h). 0, or -1 on a
 * write error (errno set). */
int rsr_sym_write_pack(const struct rsr_sym *s, FILE *f);

/* The load bias of a mapping of file: [start, ...) mapped from file offset
 * file_off. Runtime address = bias + address in the ELF's own (link-time)
 * address space. Returns 0 and sets *bias, or -1 when the file is not usable
 * or no PT_LOAD segment holds file_off. */
int rsr_sym_bias(struct rsr_sym *s, int file, uint64_t start, uint64_t file_off, uint64_t *bias);

/* Symbolises addr, an address in the file's own address space (what
 * addr2line -e FILE takes). The result is cached per (file, addr) and valid
 * until rsr_sym_free. Never NULL: where nothing is known, one level named
 * "[basename+0xADDR]". */
const struct rsr_sym_result *rsr_sym_lookup(struct rsr_sym *s, int file, uint64_t addr);

/* The C++ demangled form of name, or NULL when it is not a mangled name
 * (malloc'd: the caller frees it). */
char *rsr_sym_demangle(const char *name);

#endif
