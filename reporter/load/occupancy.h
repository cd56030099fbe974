/* How much of the GPU a kernel launch could use, from its geometry and the
 * limits the agent recorded (trace.fbs's Launch, Function, Device), as the
 * CUDA occupancy calculator works it out: blocks per SM from the warp,
 * register, shared-memory and block limits; theoretical occupancy; waves;
 * and SM coverage, the share of SMs holding at least one block averaged
 * over the kernel's waves (the block scheduler gives every SM a block before
 * any gets a second: one wave of 33 blocks on 132 SMs holds 25% of them). */
#ifndef RSR_OCCUPANCY_H
#define RSR_OCCUPANCY_H

#include <stdint.h>

#include "formats/trace.h"

struct rsr_geom {
    uint64_t blocks;            /* grid_x x grid_y x grid_z */
    uint32_t threads_per_block;
    uint32_t blocks_per_sm;     /* resident at once: the tightest limit */
    const char *limiter;        /* "warps", "registers", "shared memory", "blocks" */
    double occupancy;           /* resident warps per SM / the SM's warp slots, 0..1 */
    double waves;               /* blocks / (SMs x blocks_per_sm) */
    double sm_coverage;         /* 0..1, as above */
    double warp_share;          /* resident warps / all the GPU's warp slots, mean over waves */
};

/* The geometry of launch l of function f (NULL: attributes not known, so
 * registers and static shared memory do not limit) on device d. Returns 0,
 * or -1 when it cannot be worked out (no SMs recorded, an empty grid, or a
 * block that could not be resident at all). */
int rsr_geom_of(const struct rsf_device *d, const struct rsf_function *f, const struct rsf_launch *l,
                struct rsr_geom *out);

struct rsr_gpu_op;

/* rsr_geom_of's answer onto a model's op (has_geom and the figures); 0, or
 * -1 (the op left as it was) when there is none. */
int rsr_geom_op(struct rsr_gpu_op *op, const struct rsf_device *d, const struct rsf_function *f,
                const struct rsf_launch *l);

#endif
