/* Which frames of the flame graphs could not be named, and why, counted by
 * module: report.json's "symbols" key (with the symbol sources used) and a
 * line of the text summary. Read from the flame trees' unnamed tables
 * (flame.h), which the loader fills as it symbolises. */
#ifndef RSR_UNNAMED_H
#define RSR_UNNAMED_H

#include <stdio.h>

#include "reporter/base/json.h"
#include "reporter/load/flame.h"

/* Writes the "symbols" key and its object, spaced (json.h), for
 * fls[0..RSF_SAMPLE_NKINDS) into the object w has open. */
void rsr_unnamed_json(struct rsr_jw *w, const struct rsr_flame *fls);

/* One line to f naming the modules with unnamed frames in the first of
 * fls[0..nfls) that has any (by kind: CPU first), the most sampled first,
 * with the reason and what to try; nothing when every frame was named. */
void rsr_unnamed_summary(FILE *f, const struct rsr_flame *fls, int nfls);

/* Whether a reason for unnamed frames is a file missing or different
 * here, which --sysroot, --symbols or DEBUGINFOD_URLS can mend. */
int rsr_unnamed_file_missing(const char *why);

#endif
