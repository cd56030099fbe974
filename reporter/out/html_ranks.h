/* The HTML page's views of many ranks, whose size does not grow with the
 * job's length and grows with its ranks by a few hundred bytes each: each
 * per-rank figure as a strip plot with its outliers named, rank x time
 * heatmaps, the collective wait of every rank, the processes table, all
 * drawn on <canvas> by the page's script (page/report.js) from the compact
 * data written here; and which ranks get full timeline lanes. */
#ifndef RSR_HTML_RANKS_H
#define RSR_HTML_RANKS_H

#include <stddef.h>
#include <stdio.h>
#include <yajl/yajl_tree.h>

#include "reporter/load/model.h"

/* Up to this many ranks the page keeps its per-rank look: lanes for every
 * process and a line per rank in the utilisation charts. Beyond it, the
 * heatmaps and strip plots take over and lanes are drawn for a few. */
#define RSR_HTML_FEW_RANKS 8
/* Most reasons one lane row carries ("first, slowest"). */
#define RSR_HTML_LANE_WHYS 4

/* The per-rank figures of report.json with their robust statistics.
 * Made by rsr_html_ranks_read, freed by rsr_html_ranks_free. */
struct rsr_html_ranks;
struct rsr_html_names;

/* Reads the per-rank figures of report.json's processes (root owns the
 * strings they point to); processes are named by names (html_names.h,
 * kept, not owned). NULL when out of memory (errno ENOMEM). */
struct rsr_html_ranks *rsr_html_ranks_read(yajl_val root, const struct rsr_html_names *names);
void rsr_html_ranks_free(struct rsr_html_ranks *r);

/* How many processes have GPU figures (gpu.compute_pct). */
size_t rsr_html_ranks_gpu(const struct rsr_html_ranks *r);

/* Writes <div id="rank-dist">: a strip plot per figure (GPU compute,
 * exposed communication, GPU idle, collective wait) with its outliers named
 * in the text, for jobs of three or more GPU ranks; nothing otherwise. */
void rsr_html_rank_dist(FILE *f, const struct rsr_html_ranks *r);

/* Writes <section id="heatmaps">: a rank x time heatmap per series of
 * report.json's timeline (GPU busy and communication, storage read and
 * write where with_io) and the collective wait of every rank. Returns 0
 * when the timeline has no ranks (nothing written). */
int rsr_html_heatmaps(FILE *f, yajl_val root, const struct rsr_html_ranks *r, int with_io);

/* Writes the processes table (<table id="table-processes">), its rows left
 * for the script to fill from the rank data. */
void rsr_html_table_processes(FILE *f, const struct rsr_html_ranks *r);
/* Writes <script type="application/json" id="rank-data">, which the script
 * draws every view above from: the processes' figures, each figure's
 * median, quartiles and outlier fences, and with heatmaps the timeline's
 * series quantised. Write errors show in ferror(f). */
void rsr_html_rank_data(FILE *f, yajl_val root, const struct rsr_html_ranks *r, int heatmaps,
                        int with_io);

/* One row of timeline lanes: which model, and why it was picked (report.json
 * "lanes", or the page's own pick; nwhy 0 when every process is drawn). */
struct rsr_html_lane {
    size_t model;
    const char *why[RSR_HTML_LANE_WHYS];
    int nwhy;
};

/* 1 and the window of the lanes in seconds from the job's start when
 * report.json's "lanes" gives one that is not the whole job ("from_s",
 * "to_s", "whole_job"); 0 otherwise. */
int rsr_html_lanes_window(yajl_val root, double *from_s, double *to_s);

/* Which models get lanes, in out (room for nmodels). With report.json
 * "lanes": every model, each with its "why" where lanes.ranks names its
 * rank ("all" is no reason). Without, up to RSR_HTML_FEW_RANKS models: all
 * of them; more: rank 0, the straggler, the slowest and the fastest rank
 * as `report` picks them (the one that waited least in collectives and the
 * one that waited most; without collectives, by GPU idle). Returns how
 * many were written. */
size_t rsr_html_pick_lanes(yajl_val root, const struct rsr_html_ranks *r,
                           struct rsr_model *const *models, size_t nmodels,
                           struct rsr_html_lane *out);

#endif
