/* The flame graph as a self-contained interactive SVG (in the manner of
 * flamegraph.pl): click to zoom, reset, search by regular expression or text
 * with the matched share, hover details. Names are written only as escaped
 * XML text, never into the script. */
#ifndef RSR_FLAME_SVG_H
#define RSR_FLAME_SVG_H

#include <stdio.h>

#include "reporter/load/flame.h"

/* Writes fl as SVG to f. title: the heading (NULL: "CPU flame graph" and so
 * on by fl->kind). Frames narrower than 1/5000 of the total are merged per
 * parent into one "[N small frames]" frame. Returns 0, or -1 on a write error. */
int rsr_flame_write_svg(FILE *f, const struct rsr_flame *fl, const char *title);

/* The same for a differential graph: after's frames, each coloured by how
 * its share of the whole changed from before (red grew, blue shrank) and
 * its hover text giving the before time and the change. before gains
 * after's names (rsr_flame_match). */
int rsr_flame_write_svg_diff(FILE *f, const struct rsr_flame *after, struct rsr_flame *before, const char *title);

/* Writes s to f as XML character data safe in text and in attribute values:
 * rsr_markup_escape's RSR_MARKUP_XML (escape.h: & < > " ' as entities,
 * control characters as '?', bytes that are not UTF-8 as U+FFFD). */
void rsr_xml_escape(FILE *f, const char *s);

/* Formats ns as a short duration ("1.25 s", "830 ms", "12.0 us", "15 ns"). */
void rsr_format_ns(char *buf, size_t cap, double ns);

/* Writes OUT_DIR/step-STEP-KIND.svg for each of fls[0..RSF_SAMPLE_NKINDS)
 * that holds samples, titled "KIND flame graph of step STEP" and about.
 * Returns the kinds written (bit 1 << kind), with RSR_FLAME_WRITE_FAILED
 * when a file could not be written (said on stderr). */
#define RSR_FLAME_WRITE_FAILED 0x100u
unsigned rsr_flame_write_step_svgs(const struct rsr_flame *fls, const char *out_dir, size_t step,
                                   const char *about);

/* Writes flame-<kind>.svg and flame-<kind>.folded (what `ringside diff`
 * reads) into out_dir for each of fls[0..RSF_SAMPLE_NKINDS) that holds
 * samples, native-<kind>.svg from fls[RSF_SAMPLE_NKINDS + kind] where the
 * kind's graph has Python frames (the page's switch to every native
 * frame), and for waits flame-wait_by_reason.svg as well
 * (rsr_flame_by_reason). Returns the number of kinds written, or -1 on
 * error (said on stderr). */
int rsr_flame_write_svgs(const struct rsr_flame *fls, const char *out_dir);

#endif
