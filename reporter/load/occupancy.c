/* Occupancy from launch geometry (occupancy.h). The allocation granules
 * are those of the CUDA occupancy calculator for compute capability 5.0 and
 * newer: registers in units of 256 per warp, warps in groups of 4 for the
 * register limit, shared memory in 128-byte units (256 before 8.0), with
 * the driver's reservation per block added. */
#include "reporter/load/occupancy.h"

#include <string.h>

#include "reporter/load/model.h"

static uint64_t round_up(uint64_t v, uint64_t unit)
{
    return unit ? (v + unit - 1) / unit * unit : v;
}

int rsr_geom_of(const struct rsf_device *d, const struct rsf_function *f, const struct rsf_launch *l,
                struct rsr_geom *out)
{
    memset(out, 0, sizeof *out);
    uint64_t blocks = (uint64_t)l->grid_x * (l->grid_y ? l->grid_y : 1) * (l->grid_z ? l->grid_z : 1);
    uint32_t tpb = (uint32_t)l->block_x * (l->block_y ? l->block_y : 1) * (l->block_z ? l->block_z : 1);
    if (!d || !d->sm_count || !blocks || !tpb)
        return -1;
    uint32_t warp = d->warp_size ? d->warp_size : 32;
    uint32_t max_warps = d->max_threads_per_sm / warp;
    uint32_t warps = (tpb + warp - 1) / warp;
    if (!max_warps || warps > max_warps)
        return -1;

    uint32_t bps = d->max_blocks_per_sm ? d->max_blocks_per_sm : 32;
    const char *limiter = "blocks";
    uint32_t by_warps = max_warps / warps;
    if (by_warps < bps) {
        bps = by_warps;
        limiter = "warps";
    }
    if (f && f->regs && d->regs_per_sm) {
        if (d->regs_per_block && (uint64_t)f->regs * tpb > d->regs_per_block)
            return -1;
        uint64_t per_warp = round_up((uint64_t)f->regs * warp, 256);
        uint64_t reg_warps = d->regs_per_sm / per_warp / 4 * 4;
        uint32_t by_regs = (uint32_t)(reg_warps / warps);
        if (by_regs < bps) {
            bps = by_regs;
            limiter = "registers";
        }
    }
    uint64_t smem = (uint64_t)l->smem_dyn + (f ? f->static_smem : 0);
    if (smem && d->smem_per_sm) {
        uint64_t per_block = round_up(smem + d->smem_reserved_per_block, d->cc_major >= 8 ? 128 : 256);
        uint32_t by_smem = (uint32_t)(d->smem_per_sm / per_block);
        if (by_smem < bps) {
            bps = by_smem;
            limiter = "shared memory";
        }
    }
    if (!bps)
        return -1;

    uint64_t sms = d->sm_count, per_wave = sms * bps;
    uint64_t full = blocks / per_wave, rest = blocks % per_wave;
    uint64_t nwaves = full + (rest ? 1 : 0);
    /* a full wave holds every SM (per_wave >= SMs); the last holds what is left */
    double covered = (double)full + (rest ? (double)(rest < sms ? rest : sms) / (double)sms : 0);
    double slots = (double)sms * max_warps;
    double warps_held = (double)full * (double)(per_wave * warps) / slots + (double)(rest * warps) / slots;
    out->blocks = blocks;
    out->threads_per_block = tpb;
    out->blocks_per_sm = bps;
    out->limiter = limiter;
    out->occupancy = (double)(bps * warps) / (double)max_warps;
    out->waves = (double)blocks / (double)per_wave;
    out->sm_coverage = covered / (double)nwaves;
    out->warp_share = warps_held / (double)nwaves;
    return 0;
}

int rsr_geom_op(struct rsr_gpu_op *op, const struct rsf_device *d, const struct rsf_function *f,
                const struct rsf_launch *l)
{
    struct rsr_geom g;
    if (rsr_geom_of(d, f, l, &g) != 0)
        return -1;
    op->has_geom = 1;
    op->blocks = g.blocks;
    op->threads_per_block = g.threads_per_block;
    op->sm_coverage = (float)g.sm_coverage;
    op->occupancy = (float)g.occupancy;
    op->waves = (float)g.waves;
    op->warp_share = (float)g.warp_share;
    return 0;
}
