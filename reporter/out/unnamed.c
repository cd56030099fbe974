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

void rsr_unnamed_json(struct rsr_jw *w, const struct rsr_flame *fls)
{
    const char *sysroot, *symbols, *urls;
    int down;
    rsr_sym_sources(&sysroot, &symbols, &urls, &down);
    rsr_jw_kobject(w, "symbols", RSR_JW_SPACED);
    rsr_jw_kstr(w, "sysroot", sysroot);
    rsr_jw_kstr(w, "symbols_file", symbols);
    rsr_jw_kstr(w, "debuginfod_urls", urls);
    rsr_jw_kbool(w, "debuginfod_failed", down);
    rsr_jw_karray(w, "unnamed", RSR_JW_SPACED);
    for (int k = 0; fls && k < RSF_SAMPLE_NKINDS; k++) {
        uint32_t n;
        const struct rsr_flame_unnamed **v = sorted(&fls[k], &n);
        uint64_t total = fls[k].nodes ? fls[k].nodes[0].total : 0;
        for (uint32_t i = 0; i < n; i++) {
            rsr_jw_object(w, RSR_JW_SPACED);
            rsr_jw_kstr(w, "kind", rsf_sample_kind_name((unsigned)k));
            rsr_jw_kstr(w, "module", base_of(v[i]->path));
            rsr_jw_kstr(w, "path", v[i]->path);
            rsr_jw_kstr(w, "reason", v[i]->why);
            rsr_jw_kuint(w, "addresses", v[i]->addresses);
            rsr_jw_kuint(w, "samples", v[i]->samples);
            rsr_jw_kuint(w, "weight_ns", v[i]->weight);
            rsr_jw_knum(w, "share", total ? (double)v[i]->weight / (double)total : 0);
            rsr_jw_end(w);
        }
        free(v);
    }
    rsr_jw_end(w);
    rsr_jw_end(w);
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
