/* libFuzzer target for what `ringside diff` reads: two report folders, each
 * a report.json and the flame graphs' folded stacks (flame-cpu.folded,
 * flame-wait.folded, flame-gpu.folded). An input packs both folders
 * (fuzz_tree.h: sections "%%%% b/report.json", "%%%% a/flame-cpu.folded"...);
 * the fuzzer writes them out and runs the command whole, as main() does:
 * into a folder (diff.json, the page, the differential flame graphs), and
 * with --kind into one two-column folded file. Besides the sanitizers: a
 * failure must say so in one line naming the file at fault, and a success
 * must leave diff.json as valid JSON. */
#include "reporter/job/diff.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yajl/yajl_tree.h>

#include "tests/fuzz/fuzz_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char root[PATH_MAX - 64];
static char *errtext;
static size_t errlen;
static FILE *errs;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc; (void)argv;
    fuzz_tree_root(root, sizeof root, "diff");
    return 0;
}

/* The command's messages go to a fresh buffer that the checks read. */
static void errs_reset(void)
{
    if (errs)
        fclose(errs);
    free(errtext);
    errtext = NULL;
    errlen = 0;
    errs = open_memstream(&errtext, &errlen);
    if (!errs)
        abort();
    stderr = errs;
}

/* The side's report.json, made empty when the input has none: a folder
 * without one is a trace folder, which diff would report first. */
static void ensure_report(const char *side)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", root, side);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/%s/report.json", root, side);
    if (access(p, F_OK) != 0) {
        FILE *f = fopen(p, "w");
        if (f)
            fclose(f);
    }
}

/* A failure: one line, "ringside: diff: " and a file under root. */
static void check_failure(const char *what)
{
    fflush(errs);
    const char *nl = errtext ? strchr(errtext, '\n') : NULL;
    int named = strstr(errtext, root) || strstr(errtext, "stacks on both sides (flame-");
    if (!errlen || !nl || nl[1] || strncmp(errtext, "ringside: diff: ", 16) != 0 || !named) {
        dprintf(2, "fuzz_diff: %s failed without one line naming a file: \"%.*s\"\n", what, (int)errlen,
                errtext ? errtext : "");
        abort();
    }
}

static void check_json(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        abort();
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    int c;
    while ((c = getc(f)) != EOF)
        putc(c, m);
    fclose(f);
    fclose(m);
    char err[256];
    yajl_val v = yajl_tree_parse(text, err, sizeof err);
    if (!v) {
        dprintf(2, "fuzz_diff: %s is not JSON: %s\n", path, err);
        abort();
    }
    yajl_tree_free(v);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_tree_write(root, data, size);
    ensure_report("b");
    ensure_report("a");
    char b[PATH_MAX], a[PATH_MAX], out[PATH_MAX];
    snprintf(b, sizeof b, "%s/b", root);
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(out, sizeof out, "%s/out", root);

    errs_reset();
    struct rsr_diff_opts o = { .out = out, .quiet = 1 };
    int rc = rsr_diff_run(b, a, &o);
    if (rc != 0) {
        check_failure("the diff");
        return 0;
    }
    char p[PATH_MAX + 16];
    snprintf(p, sizeof p, "%s/diff.json", out);
    check_json(p);

    /* --kind: the stacks of one kind, chosen by the input. */
    static const char *const kinds[] = { "cpu", "wait", "gpu" };
    errs_reset();
    snprintf(p, sizeof p, "%s/one.folded", root);
    struct rsr_diff_opts k = { .out = p, .kind = kinds[size % 3], .quiet = 1 };
    if (rsr_diff_run(b, a, &k) != 0)
        check_failure("--kind");
    return 0;
}
