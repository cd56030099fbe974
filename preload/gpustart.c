/* Where a launch's work started on the GPU (writer.c settles each timed
 * launch with it, on the writer thread alone): a pure function of the
 * launch's record and its stream's previous end, so that the unit tests hold
 * it against real profiles (tests/unit/test_gpustart.c). */
#include "preload/agent.h"

/* The start of a launch's work. Its start event runs when its stream
 * reaches it: after the work before it, or, on an idle stream, a pickup lag
 * after the event was handed over, while the launch call is still handing
 * its own work over (5 to 10 us on an H200 with PyTorch; milliseconds where
 * the call loads the module first). So, with GPU times alone (the anchors'
 * mapping onto the host clock is good to a few microseconds, not better):
 * - idle stream (the start event ran later than BACK_TO_BACK_NS after the
 *   stream's previous work ended): the work was picked up as the event was,
 *   the call's own time later: the start event plus the real call's time;
 * - busy stream: a kernel begins KERNEL_GAP_NS after its start event (an
 *   H200 took 2.2 to 3.7 us, p1 to p99), other work at once; and a kernel
 *   never sooner than that. A graph's launch counts as a kernel: its first
 *   nodes are, as a rule;
 * - a start event that ran more than HANDED_LATE_NS before the real call
 *   began (the thread was held up between the two: descheduled, say) saw
 *   the stream drain before the work came: idle, picked up while the call
 *   handed it over, the call's own time after it began;
 * - a start event that ran more than WAITED_NS after the call returned
 *   (host time against GPU time: the anchors are good to a few us, this
 *   is tens) waited for something, another stream's event as a rule: its
 *   stream looks idle, but the work was there already, as on a busy one.
 * Against Kineto's kernels of a PyTorch training loop on an H200 (5,080, two
 * runs) durations came out a median 0.8 us off, p99 5.6 and 6.1 us (the
 * start event alone: 8.4 and 6.8 us, p99 25.8 and 28.9 us, max 7.7 ms);
 * the rule for a thread held up took their largest errors from 140 and 215
 * us to 24 and 127 (16 kernels of 12,114 ran their start event 20 us and
 * more before the call began). Work that ended before that estimate was
 * handed over earlier than the call returned: the call's start where the
 * stream drained before it, else the start event. Synchronous calls, which return after their
 * work, keep the start event, no earlier than the call. */
#define BACK_TO_BACK_NS 1500
#define WAITED_NS 20000
#define HANDED_LATE_NS 20000
#define KERNEL_GAP_NS 2500
#define STREAM_ENDS 512u

/* The end of the last work settled on each stream (by the agent's stream id,
 * as the collectives, which carry no device, have it). */
static struct stream_end {
    uint64_t stream, end_ns;     /* end_ns 0: free */
} stream_ends[STREAM_ENDS];

uint64_t *rs_gpu_stream_end(uint64_t stream)
{
    uint32_t home = (uint32_t)((stream * 0x9e3779b97f4a7c15ull) >> 55) % STREAM_ENDS;
    for (uint32_t n = 0; n < 8; n++) {
        struct stream_end *x = &stream_ends[(home + n) % STREAM_ENDS];
        if (x->stream == stream || x->end_ns == 0) {
            x->stream = stream;
            return &x->end_ns;
        }
    }
    /* full around home: that slot starts over with this stream */
    stream_ends[home] = (struct stream_end){ stream, 0 };
    return &stream_ends[home].end_ns;
}

uint64_t rs_gpu_work_start(const struct rsf_gpu_event *e, uint32_t ret_ns, uint64_t prev_end)
{
    uint64_t ev = e->gpu_start_ns, from = ev, s;
    if (e->flags & RSF_GPUF_SYNC)
        return ev > e->launch_ns ? ev : e->launch_ns;
    uint64_t gap = e->kind == RSF_GPU_KERNEL || e->kind == RSF_GPU_GRAPH ? KERNEL_GAP_NS : 0;
    int idle = !prev_end || ev > prev_end + BACK_TO_BACK_NS;
    /* the stream drained before the real call began (launch_ns): the work
     * came to an idle stream */
    if (ev + HANDED_LATE_NS < e->launch_ns)
        from = e->launch_ns, idle = 1;
    /* a start event that ran well after the call returned waited for
     * something (another stream's event): the work was there already */
    if (idle && from < e->launch_ns + ret_ns + WAITED_NS)
        s = from + (ret_ns > gap ? ret_ns : gap);
    else
        s = from + gap;
    return s < e->gpu_end_ns ? s : from < e->gpu_end_ns ? from : ev;
}
