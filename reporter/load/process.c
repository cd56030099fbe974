/* A process's model with what it owns, whole (see process.h). */
#include "reporter/load/process.h"
#include "reporter/load/memory.h"
#include "reporter/load/nodes_load.h"
#include "reporter/load/summary.h"

#include <stdlib.h>

size_t rsr_model_bytes(const struct rsr_model *m)
{
    return rsr_model_records_bytes(m) + (m->sum ? sizeof *m->sum + rsr_summary_bytes(m->sum) : 0) +
           rsr_node_proc_bytes(m->node) + rsr_memory_bytes(m->mem);
}

void rsr_model_free(struct rsr_model *m)
{
    if (m->sum) {
        rsr_summary_free(m->sum);
        free(m->sum);
        m->sum = NULL;
    }
    rsr_node_proc_free(m->node);
    m->node = NULL;
    rsr_memory_free(m->mem);
    m->mem = NULL;
    rsr_model_records_free(m);
}

void rsr_model_shift(struct rsr_model *m, int64_t delta_ns)
{
    rsr_model_records_shift(m, delta_ns);
    if (m->sum)
        rsr_summary_shift(m->sum, delta_ns);
    rsr_memory_shift(m->mem, delta_ns);
}
