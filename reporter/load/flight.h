/* What each communicator's calls were doing when a process's file ended
 * (hang.h reads it across ranks): the last call that finished on the GPU,
 * the last one entered, and the first one entered that never finished: in
 * flight at the end, as a job that hangs leaves its waiting ranks. Kept in
 * a fixed size per process, whatever the job's length: memory grows with
 * processes only. */
#ifndef RSR_FLIGHT_H
#define RSR_FLIGHT_H

#include <stdint.h>

#include "reporter/load/model.h"

/* Communicators followed per process (a 3D-parallel rank has a handful);
 * past this many, the ones seen first are kept. */
#define RSR_FLIGHT_COMMS 16
/* Calls without GPU times kept per communicator, the lowest sequence
 * numbers above the last one it finished (rsr_flight_open_above). */
#define RSR_FLIGHT_OPEN 8

/* One call entered (launched on the host) that has no GPU times. */
struct rsr_flight_call {
    int64_t launch_ns;          /* its host call's start, the file's clock */
    uint64_t bytes;
    uint32_t seq;
    uint32_t dtype;             /* model string id */
    int32_t peer;               /* root or peer, -1: none */
    uint8_t op;                 /* enum rsr_coll_op */
    uint8_t pad_[3];
};

struct rsr_flight {
    uint64_t comm_id;
    int64_t done_seq;           /* highest sequence number with GPU times; -1: none */
    int64_t done_end_ns;        /* its GPU end */
    int64_t last_seq;           /* highest sequence number entered; -1: none */
    int32_t group_size, rank_in_group;  /* -1: not known */
    uint32_t n_open;            /* open[0..n_open): seq above done_seq, lowest first */
    uint32_t pad_;
    struct rsr_flight_call open[RSR_FLIGHT_OPEN];
};

struct rsr_flights {
    struct rsr_flight v[RSR_FLIGHT_COMMS];
    uint32_t n;
    uint32_t dropped;           /* communicators past RSR_FLIGHT_COMMS */
};

/* Takes one call (timed or not, in any order) of the process's. Calls a
 * CUDA graph replays are left out (their numbers are not the host's). */
void rsr_flight_take(struct rsr_flights *f, const struct rsr_coll *c);

/* The first call on f's communicator entered above floor that never
 * finished, NULL when none: with floor the highest call any rank of the
 * communicator finished (one at or below it has finished everywhere; a file
 * that lacks its times lost them), the call in flight at the file's end. */
const struct rsr_flight_call *rsr_flight_open_above(const struct rsr_flight *f, int64_t floor);

#endif
