/* report.json's "nodes" (see nodes_json.h): per host its figures, its links
 * and disks, and its series binned on the job's timeline. */
#include "reporter/out/nodes_json.h"

#include <math.h>

/* A figure that may be unknown (< 0): null then. */
static void opt_key(struct rsr_jw *w, const char *key, double v)
{
    rsr_jw_knum(w, key, v < 0 ? NAN : v);
}

static void bins_key(struct rsr_jw *w, const char *key, const double *v, size_t n)
{
    rsr_jw_karray(w, key, 0);
    for (size_t i = 0; v && i < n; i++)
        rsr_jw_num(w, v[i]);
    rsr_jw_end(w);
}

static void link_json(struct rsr_jw *w, const struct rsr_node_link *l, size_t nbins)
{
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "name", l->name);
    rsr_jw_kstr(w, "kind", rsf_link_kind_name(l->link) ? rsf_link_kind_name(l->link) : "none");
    rsr_jw_knum(w, "rate_gbs", l->rate_gbs > 0 ? l->rate_gbs : NAN);
    rsr_jw_kuint(w, "tx_bytes", l->tx_bytes);
    rsr_jw_kuint(w, "rx_bytes", l->rx_bytes);
    rsr_jw_knum(w, "mean_gbs", l->mean_gbs);
    rsr_jw_knum(w, "peak_gbs", l->peak_gbs);
    opt_key(w, "in_collectives_gbs", l->in_coll_gbs);
    bins_key(w, "tx_gbs", l->tx_gbs, nbins);
    bins_key(w, "rx_gbs", l->rx_gbs, nbins);
    rsr_jw_end(w);
}

static void disk_json(struct rsr_jw *w, const struct rsr_node_disk *d, size_t nbins)
{
    rsr_jw_object(w, 0);
    rsr_jw_kstr(w, "name", d->name);
    rsr_jw_kbool(w, "nfs", d->nfs);
    rsr_jw_kuint(w, "read_bytes", d->read_bytes);
    rsr_jw_kuint(w, "write_bytes", d->write_bytes);
    rsr_jw_knum(w, "peak_read_gbs", d->peak_read_gbs);
    rsr_jw_knum(w, "peak_write_gbs", d->peak_write_gbs);
    bins_key(w, "read_gbs", d->read_gbs, nbins);
    bins_key(w, "write_gbs", d->write_gbs, nbins);
    rsr_jw_end(w);
}

void rsr_nodes_json(struct rsr_jw *w, const struct rsr_nodes *nodes)
{
    rsr_jw_karray(w, "nodes", RSR_JW_LINES);
    for (size_t i = 0; i < nodes->n; i++) {
        const struct rsr_node *nd = &nodes->v[i];
        rsr_jw_object(w, 0);
        rsr_jw_kstr(w, "host", nd->host);
        opt_key(w, "cpu_pct", nd->cpu_pct);
        opt_key(w, "mem_used_pct", nd->mem_used_pct);
        opt_key(w, "mem_dirty_mb", nd->mem_dirty_mb);
        rsr_jw_knum(w, "collectives_s", nd->coll_s);
        rsr_jw_kuint(w, "files", nd->files);
        rsr_jw_karray(w, "links", RSR_JW_LINES);
        for (size_t k = 0; k < nd->n_links; k++)
            link_json(w, &nd->links[k], nodes->nbins);
        rsr_jw_end(w);
        rsr_jw_karray(w, "disks", RSR_JW_LINES);
        for (size_t k = 0; k < nd->n_disks; k++)
            disk_json(w, &nd->disks[k], nodes->nbins);
        rsr_jw_end(w);
        rsr_jw_kobject(w, "timeline", 0);
        rsr_jw_kfixed(w, "start_us", (double)nodes->start_ns / 1e3, 3);
        rsr_jw_knum(w, "bin_us", (double)nodes->bin_ns / 1e3);
        bins_key(w, "cpu_pct", nd->cpu_bins, nodes->nbins);
        bins_key(w, "mem_used_pct", nd->mem_bins, nodes->nbins);
        bins_key(w, "collectives_pct", nd->coll_bins, nodes->nbins);
        rsr_jw_end(w);
        rsr_jw_end(w);
    }
    rsr_jw_end(w);
}
