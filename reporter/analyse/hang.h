/* A stuck job's verdict, from what the files say at their ends (flight.h):
 * on the communicator whose call has waited longest, the ranks that
 * entered it and never saw it finish (waiting), the ranks that never
 * entered it (missing), and where each missing rank was when its file
 * ended (its main thread's last sample, waits.h). Kinds:
 * - hang: some ranks never entered the call the others wait in, or every
 *   rank entered it and it never finished;
 * - desync: at that sequence number the ranks called different things
 *   (op, size, datatype, root or peer): each rank's call is named;
 * - crash: a missing rank died of a fatal signal (the agent's fatal mark:
 *   a fault, an abort), or its file ended without an end mark well before
 *   the waiting ranks' did: it died while they waited. A waiting rank that
 *   aborts (a collective timeout's watchdog) is a waiting rank all the
 *   same: the verdict names the rank it waited for.
 * Without NCCL records (gloo, or collectives the agent does not see), the
 * verdict comes from the ranks' main threads instead: those whose last long
 * wait (RSR_WHERE_LONG_NS or more) was in a torch.distributed collective and
 * lasted to their file's end are waiting; the others are missing, where
 * their own last long wait, or last sample, says; and one of the missing
 * was killed while it waited (SIGTERM, SIGINT: the agent's killed mark) or
 * died of a fatal signal (a job that ended on its own is not stuck). No communicator or
 * sequence number is known then (seq_known 0); op_text names the
 * collective by its Python frame.
 * A call counts as stuck once it has waited RSR_HANG_MIN_S in flight: a
 * healthy job's last call, entered just before the process exits, is not;
 * or at once when a rank of its communicator died of a fatal signal
 * outside it (an NCCL that sees its peer gone fails the call at once). */
#ifndef RSR_HANG_H
#define RSR_HANG_H

#include <stddef.h>
#include <stdint.h>

#include "reporter/load/model.h"

#define RSR_HANG_MIN_S 1.0
/* A missing rank whose file ends this much before the waiting ranks'
 * stopped with them waiting: it crashed (or was killed alone). */
#define RSR_HANG_CRASH_S 2.0

enum rsr_hang_kind { RSR_HANG_NONE, RSR_HANG_HANG, RSR_HANG_DESYNC, RSR_HANG_CRASH };

/* One rank's part in the verdict. */
struct rsr_hang_rank {
    size_t model;
    int32_t rank;               /* global rank; -1: not known */
    int64_t last_seq_done;      /* on the communicator; -1: none */
    int64_t last_seq_entered;   /* -1: none */
    int in_flight;              /* entered the stuck call, never saw it finish */
    double waited_s;            /* in it, until its file ended */
    double ended_before_s;      /* its file ended this long before the last waiting rank's (missing ranks) */
    int unclosed;               /* its file has no end mark (model.h's unclosed) */
    int fatal_sig;              /* the fatal signal it died of; 0: none */
    int odd;                    /* a desync: its call is not the most common one */
    /* its call at the stuck sequence number (in flight) */
    uint8_t op;
    uint64_t bytes;
    uint32_t dtype;             /* its model's string id */
    int32_t peer;
    const char *where;          /* its main thread's last stack (waits.h), "" when none */
    uint64_t where_wait_ns;
};

struct rsr_hang {
    int kind;                   /* enum rsr_hang_kind; NONE: the rest is empty */
    uint64_t comm_id;           /* 0: not known (from the waits) */
    int role;                   /* enum rsr_group_role; -1: not known */
    uint32_t seq;
    int seq_known;              /* 0: from the waits, no NCCL call to number */
    char op_text[96];           /* from the waits: the collective's Python frame ("all_reduce") */
    int64_t step;               /* the step it hung in (report.json's step index); -1: not known */
    int64_t entered_ns;         /* the first waiting rank's entry (job's clock) */
    uint8_t op;                 /* the waiting ranks' call (the most common one) */
    uint64_t bytes;
    const char *dtype;
    double waited_s;            /* the longest any rank waited */
    int32_t *waiting, *missing; /* global ranks, ascending */
    size_t n_waiting, n_missing;
    int32_t group_size;         /* the communicator's ranks (-1: not known) */
    size_t absent;              /* of them, ranks with no trace file */
    struct rsr_hang_rank *ranks;        /* waiting and missing, by rank */
    size_t n_ranks;
    uint32_t comms_stuck;       /* communicators with a call stuck in flight */
};

struct rsr_steps;
struct rsr_groups;

/* Fills *out from the summaries of models[0..n) (aligned), the steps found
 * and the communicators by role. Returns 0, or -1 when out of memory. */
int rsr_hang_analyse(struct rsr_model *const *models, size_t n, const struct rsr_steps *steps,
                     const struct rsr_groups *groups, struct rsr_hang *out);

void rsr_hang_free(struct rsr_hang *h);

const char *rsr_hang_kind_name(int kind);

/* "SIGSEGV" for sig into buf (n bytes), "signal N" for one without a name;
 * returns buf. */
const char *rsr_signal_name(int sig, char *buf, size_t n);

/* One line on it: "rank 1 never entered AllReduce #23 of the data-parallel
 * communicator at step 5; ranks 0, 2, 3 waited 11.9 s for it". */
void rsr_hang_text(const struct rsr_hang *h, char *buf, size_t n);

#endif
