/* The unnamed frames of a report (unnamed.h): the flame trees' tables,
 * sorted by samples, as JSON and as one summary line. */
#include "reporter/out/unnamed.h"
#include "reporter/base/json.h"
#include "reporter/load/symbolize.h"
#include "formats/trace.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static int by_weight(const void *a, const void *b)
{
    const struct rsr_flame_unnamed *x = *(const struct rsr_flame_unnamed *const *)a,
                                   *y = *(const struct rsr_flame_unnamed *const *)b;
    if (x->weight != y->weight)
        return x->weight > y->weight ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* fl's entries, heaviest first (malloc'd; *n the count). */
static const struct rsr_flame_unnamed **sorted(const struct rsr_flame *fl, uint32_t *n)
{
    const struct rsr_flame_unnamed **v = rsr_xcalloc(fl->nunnamed + 1, sizeof *v);
    for (uint32_t i = 0; i < fl->nunnamed; i++)
        v[i] = &fl->unnamed[i];
    qsort(v, fl->nunnamed, sizeof *v, by_weight);
    *n = fl->nunnamed;
    return v;
}

static const char *base_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

void rsr_unnamed_json(FILE *f, const struct rsr_flame *fls)
{
    const char *sysroot, *symbols, *urls;
    int down;
    rsr_sym_sources(&sysroot, &symbols, &urls, &down);
    fputs("\"symbols\": {\"sysroot\": ", f);
    rsr_json_str(f, sysroot);
    fputs(", \"symbols_file\": ", f);
    rsr_json_str(f, symbols);
    fputs(", \"debuginfod_urls\": ", f);
    rsr_json_str(f, urls);
    fprintf(f, ", \"debuginfod_failed\": %s, \"unnamed\": [", down ? "true" : "false");
    int first = 1;
    for (int k = 0; fls && k < RSF_SAMPLE_NKINDS; k++) {
        uint32_t n;
        const struct rsr_flame_unnamed **v = sorted(&fls[k], &n);
        uint64_t total = fls[k].nodes ? fls[k].nodes[0].total : 0;
        for (uint32_t i = 0; i < n; i++) {
            fprintf(f, "%s{\"kind\": \"%s\", \"module\": ", first ? "" : ", ", rsf_sample_kind_name((unsigned)k));
            first = 0;
            rsr_json_str(f, base_of(v[i]->path));
            fputs(", \"path\": ", f);
            rsr_json_str(f, v[i]->path);
            fputs(", \"reason\": ", f);
            rsr_json_str(f, v[i]->why);
            fprintf(f, ", \"addresses\": %" PRIu64 ", \"samples\": %" PRIu64 ", \"weight_ns\": %" PRIu64
                       ", \"share\": ", v[i]->addresses, v[i]->samples, v[i]->weight);
            rsr_json_num(f, total ? (double)v[i]->weight / (double)total : 0);
            fputc('}', f);
        }
        free(v);
    }
    fputs("]}", f);
}

void rsr_unnamed_summary(FILE *f, const struct rsr_flame *fls, int nfls)
{
    const struct rsr_flame *fl = NULL;
    for (int k = 0; fls && k < nfls && !fl; k++)
        if (fls[k].nunnamed)
            fl = &fls[k];
    if (!fl)
        return;
    uint32_t n;
    const struct rsr_flame_unnamed **v = sorted(fl, &n);
    uint64_t total = fl->nodes[0].total;
    int files = 0;
    fprintf(f, "ringside: %s frames not named:", rsf_sample_kind_name((unsigned)fl->kind));
    for (uint32_t i = 0; i < n && i < 4; i++) {
        fprintf(f, "%s %s %.1f%% of samples (%" PRIu64 " address%s: %s)", i ? ";" : "", base_of(v[i]->path),
                total ? 100.0 * (double)v[i]->weight / (double)total : 0.0, v[i]->addresses,
                v[i]->addresses == 1 ? "" : "es", v[i]->why);
    }
    for (uint32_t i = 0; i < n; i++)
        files += rsr_unnamed_file_missing(v[i]->why);
    if (n > 4)
        fprintf(f, "; %u more modules", n - 4);
    fprintf(f, "%s\n", files ? " (report.json \"symbols\"; --sysroot DIR, --symbols FILE or DEBUGINFOD_URLS "
                               "give the files of the machine that ran)" : " (report.json \"symbols\")");
    free(v);
}

int rsr_unnamed_file_missing(const char *why)
{
    return why && (strstr(why, "not found") || strstr(why, "differs"));
}
