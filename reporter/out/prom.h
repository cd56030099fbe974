/* The live figures of `ringside report --prom-dir DIR` (with --watch, every
 * period) in Prometheus' text exposition format, for node_exporter's
 * textfile collector: time per step, GPU busy and SM activity, the wait
 * for a late rank, exposed transfer, checkpoints, the stragglers, link and
 * storage throughput, labelled by job (and rank, host, link, disk). */
#ifndef RSR_PROM_H
#define RSR_PROM_H

/* Writes DIR/ringside-JOB.prom from the report.json at json_path, whole: a
 * temporary file in DIR renamed over the last one, so that a scrape never
 * reads half of it. Returns 0, or -1 with one line on stderr. */
int rsr_prom_write(const char *json_path, const char *dir);

#endif
