/* `ringside history ROOT...`: every run under trace roots indexed into a
 * SQLite database (one row per run, its report's figures; the schema is
 * docs/history.md's, versioned), the runs of one workload grouped into a
 * series, and each run held against its series' own noise: a robust band
 * (median and median absolute deviation) of the time per step of its good
 * runs before it. A run outside the band is a regression or an
 * improvement, explained by what `ringside diff` against the series' last
 * good run says moved most. */
#ifndef RSR_HISTORY_H
#define RSR_HISTORY_H

struct rsr_history_opts {
    const char *db;         /* --db FILE; NULL: ROOT/ringside-history.db (the first root) */
    const char *check;      /* --check RUN: a trace folder of a run (or its key); NULL: none */
    const char *page;       /* -o FILE: the history page; NULL: ringside-history.html beside the database */
    int quiet;
};

/* The schema version history writes and reads (the meta table's
 * "schema_version"); a database of another version is refused. */
#define RSR_HISTORY_SCHEMA 1

/* A run is held against its series once the series has this many good
 * runs before it; the band is the median of the last RSR_HISTORY_WINDOW of
 * them, +- RSR_HISTORY_K times their MAD scaled to a standard deviation
 * (1.4826), and never narrower than RSR_HISTORY_MIN_PCT of the median. */
#define RSR_HISTORY_MIN_RUNS 3
#define RSR_HISTORY_WINDOW 20
#define RSR_HISTORY_K 4.0
#define RSR_HISTORY_MIN_PCT 5.0

/* Runs the command on roots[0..nroots); returns the exit status: 0, 1 (a
 * failure said on stderr, or --check's run regressed), 2 (usage). */
int rsr_history_run(char **roots, int nroots, const struct rsr_history_opts *o);

#endif
