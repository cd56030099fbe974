/* The simulated GPU's SMs: how a kernel's blocks sit on them (its own model,
 * written to the truth file), and the record of what ran when, from which the
 * stand-in NVML (simnvml.c) answers utilisation and GPM SM activity.
 *
 * THE MODEL
 *   The device is SIMGPU_SMS SMs (132) of 2048 threads (64 warps of 32), 32
 *   blocks, 65536 registers and 228 KiB of shared memory each (1 KiB of it
 *   reserved per block). A function uses SIMGPU_REGS registers per thread
 *   (32) and SIMGPU_STATIC_SMEM bytes of static shared memory (0). Blocks per
 *   SM: the fewest that any of warps, registers (256-register units per warp),
 *   shared memory (128-byte units) and the block limit allow. The block
 *   scheduler deals a wave's blocks out one per SM before it gives any SM a
 *   second, so a wave of b blocks holds min(b, SMs) SMs; a kernel runs in
 *   ceil(blocks / (SMs x blocks per SM)) waves of equal length, the last one
 *   holding what is left. Its SM coverage is the mean over its waves of the
 *   share of SMs holding a block, its occupancy the mean share of all warp
 *   slots in use. Copies and sets hold no SM; collectives hold the blocks
 *   libnccl launches them with (a block per channel, SIMNCCL_CHANNELS). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/sim/simgpu_internal.h"

enum {
    SIM_MAX_WARPS = 64, SIM_MAX_BLOCKS = 32, SIM_REGS = 65536, SIM_SMEM = 233472,
    SIM_SMEM_RESERVED = 1024
};

void sim_geometry(const unsigned dims[6], unsigned smem_dyn, struct sim_geom *g)
{
    memset(g, 0, sizeof *g);
    uint64_t blocks = (uint64_t)dims[0] * dims[1] * dims[2];
    unsigned tpb = dims[3] * dims[4] * dims[5];
    if (!blocks || !tpb)
        return;
    unsigned warps = (tpb + 31) / 32;
    unsigned regs_warp = ((unsigned)sim_cfg.regs * 32 + 255) / 256 * 256;
    unsigned by_warps = SIM_MAX_WARPS / warps;
    unsigned by_regs = regs_warp ? SIM_REGS / regs_warp / warps : SIM_MAX_BLOCKS;
    unsigned smem = (unsigned)sim_cfg.static_smem + smem_dyn + SIM_SMEM_RESERVED;
    smem = (smem + 127) / 128 * 128;
    unsigned by_smem = SIM_SMEM / smem;
    unsigned bps = SIM_MAX_BLOCKS;
    if (by_warps < bps)
        bps = by_warps;
    if (by_regs < bps)
        bps = by_regs;
    if (by_smem < bps)
        bps = by_smem;
    g->blocks = blocks;
    g->threads_per_block = tpb;
    g->blocks_per_sm = bps;
    if (!bps)
        return;   /* cannot run: a real driver would refuse the launch */
    uint64_t sms = (uint64_t)sim_cfg.sms, per_wave = sms * bps;
    g->waves = (blocks + per_wave - 1) / per_wave;
    double cov = 0, occ = 0;
    uint64_t left = blocks;
    for (uint64_t w = 0; w < g->waves; w++) {
        uint64_t b = left < per_wave ? left : per_wave;
        left -= b;
        cov += (double)(b < sms ? b : sms) / (double)sms;
        occ += (double)(b * warps) / (double)(sms * SIM_MAX_WARPS);
    }
    g->sm_coverage = cov / (double)g->waves;
    g->occupancy = occ / (double)g->waves;
}

/* What ran, per device: the last ACT_N operations that hold the GPU. */
#define ACT_N 65536u
struct sim_act {
    uint64_t start_ns, end_ns;
    float cov, occ;
};
static struct sim_act *act[64];
static uint64_t act_n[64];

void sim_activity_add(const struct sim_op *op)
{
    if (op->failed || op->device < 0 || op->device >= 64 || op->end_ns <= op->start_ns)
        return;
    if (op->kind != SIM_KERNEL && op->kind != SIM_EXT)
        return;
    struct sim_act **a = &act[op->device];
    if (!*a && !(*a = calloc(ACT_N, sizeof **a)))
        return;
    (*a)[act_n[op->device]++ % ACT_N] = (struct sim_act){ op->start_ns, op->end_ns, (float)op->geom.sm_coverage,
                                                           (float)op->geom.occupancy };
}

struct simgpu_activity {
    uint64_t busy_ns;
    double sm_active_ns, sm_occupancy_ns;
};

struct act_edge {
    uint64_t t;
    float cov, occ;   /* added at t (negative: taken away) */
    int busy;
};

static int edge_cmp(const void *a, const void *b)
{
    const struct act_edge *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

SIM_EXPORT int simgpu_activity(int device, uint64_t t0, uint64_t t1, struct simgpu_activity *out);

/* Over [t0, t1): the time some operation ran, and the time integrals of the
 * share of SMs holding a block and of warp slots in use (concurrent kernels
 * summed, each capped at 1). 0, or -1 when there is no such device. */
int simgpu_activity(int device, uint64_t t0, uint64_t t1, struct simgpu_activity *out)
{
    if (!out || device < 0 || device >= 64 || (sim_cfg.devices && device >= sim_cfg.devices))
        return -1;
    memset(out, 0, sizeof *out);
    if (t1 <= t0)
        return 0;
    pthread_mutex_lock(&sim_lock);
    uint64_t n = act_n[device] < ACT_N ? act_n[device] : ACT_N;
    struct act_edge *e = n ? malloc(2 * n * sizeof *e) : NULL;
    size_t ne = 0;
    for (uint64_t i = 0; e && i < n; i++) {
        const struct sim_act *x = &act[device][i];
        uint64_t s = x->start_ns > t0 ? x->start_ns : t0, f = x->end_ns < t1 ? x->end_ns : t1;
        if (f <= s)
            continue;
        e[ne++] = (struct act_edge){ s, x->cov, x->occ, 1 };
        e[ne++] = (struct act_edge){ f, -x->cov, -x->occ, -1 };
    }
    pthread_mutex_unlock(&sim_lock);
    qsort(e, ne, sizeof *e, edge_cmp);
    double cov = 0, occ = 0;
    int busy = 0;
    for (size_t i = 0; i < ne; i++) {
        if (i > 0 && e[i].t > e[i - 1].t) {
            double dt = (double)(e[i].t - e[i - 1].t);
            if (busy > 0)
                out->busy_ns += e[i].t - e[i - 1].t;
            out->sm_active_ns += dt * (cov > 1 ? 1 : cov > 0 ? cov : 0);
            out->sm_occupancy_ns += dt * (occ > 1 ? 1 : occ > 0 ? occ : 0);
        }
        cov += e[i].cov;
        occ += e[i].occ;
        busy += e[i].busy;
    }
    free(e);
    return 0;
}
