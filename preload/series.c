/* Node and GPU counter series as records (agent.h): the definitions and
 * points that metrics.c and nvml.c make, on the thread that samples. */
#include <string.h>

#include "preload/agent.h"

static _Atomic uint32_t next_series;

uint32_t rs_series_define(int kind, int link, const char *name, int device, uint64_t rate)
{
    size_t n = name ? strnlen(name, 255) : 0;
    size_t size = (sizeof(struct rs_rec_series) + n + 1 + 7) & ~(size_t)7;
    struct rs_rec_series *r = rs_reserve(size, RS_REC_SERIES);
    if (!r)
        return 0;
    uint32_t id = atomic_fetch_add(&next_series, 1) + 1;
    r->h = (struct rs_rec_hdr){ (uint16_t)size, RS_REC_SERIES, (uint8_t)kind, id };
    r->rate = rate;
    r->device = device;
    r->link = (uint8_t)link;
    memset(r->pad_, 0, sizeof r->pad_);
    if (n)
        memcpy(r->name, name, n);
    r->name[n] = 0;
    rs_commit(size);
    return id;
}

void rs_series_point(uint32_t id, uint64_t ts_ns, uint64_t value)
{
    if (!id)
        return;
    struct rs_rec_point *r = rs_reserve(sizeof *r, RS_REC_POINT);
    if (!r)
        return;
    r->h = (struct rs_rec_hdr){ sizeof *r, RS_REC_POINT, 0, id };
    r->ts_ns = ts_ns;
    r->value = value;
    rs_commit(sizeof *r);
}
