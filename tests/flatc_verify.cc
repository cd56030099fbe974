// Holds the hand-written C side of the trace format against the code that
// Debian's flatc generates from formats/trace.fbs ($(BUILD)/gen): struct
// layouts, enum names and table slots (at compile time where C++ can see
// them, else through flatc's mini-reflection tables), then runs flatbuffers'
// own C++ Verifier on every size-prefixed chunk file named on the command line.
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

// trace.h states its layouts with C11's _Static_assert, which C++ spells
// static_assert; its functions have C linkage.
#define _Static_assert static_assert
extern "C" {
#include "formats/chunk.h"
#include "formats/trace.h"
}
#undef _Static_assert

#include "trace_generated.h"

namespace fb = flatbuffers;

// ---- compile time: sizes, alignments, enum values, vtable slots ----

#define SAME_SIZE(gen, c)                                                            \
    static_assert(sizeof(ringside::gen) == sizeof(struct c), #gen " size");          \
    static_assert(alignof(ringside::gen) == alignof(struct c), #gen " alignment")
SAME_SIZE(ClockPair, rsf_clock_pair);
SAME_SIZE(IoEvent, rsf_io_event);
SAME_SIZE(FileRef, rsf_file_ref);
SAME_SIZE(ThreadRef, rsf_thread_ref);
SAME_SIZE(GpuEvent, rsf_gpu_event);
SAME_SIZE(SyncEvent, rsf_sync_event);
SAME_SIZE(CollEvent, rsf_coll_event);
SAME_SIZE(CommEvent, rsf_comm_event);
SAME_SIZE(MemEvent, rsf_mem_event);
SAME_SIZE(Frame, rsf_frame);
SAME_SIZE(Sample, rsf_sample);
SAME_SIZE(Module, rsf_module);
SAME_SIZE(Range, rsf_range);
SAME_SIZE(Launch, rsf_launch);
SAME_SIZE(Function, rsf_function);
SAME_SIZE(Device, rsf_device);
SAME_SIZE(Series, rsf_series);
SAME_SIZE(Point, rsf_point);
SAME_SIZE(CollGroup, rsf_coll_group);
SAME_SIZE(GraphNode, rsf_graph_node);
SAME_SIZE(GraphEdge, rsf_graph_edge);
SAME_SIZE(Mark, rsf_mark);
SAME_SIZE(MemInfo, rsf_mem_info);

#define SAME_VALUE(gen, c) static_assert(int(ringside::gen) == int(c), #gen)
SAME_VALUE(Role_rank, RSF_ROLE_RANK);
SAME_VALUE(Role_child, RSF_ROLE_CHILD);
SAME_VALUE(Role_other, RSF_ROLE_OTHER);
SAME_VALUE(Role_MAX, RSF_ROLE_OTHER);
SAME_VALUE(IoOp_MAX, RSF_IO_NOPS - 1);
SAME_VALUE(GpuKind_MAX, RSF_GPU_NKINDS - 1);
SAME_VALUE(CopyDir_MAX, RSF_COPY_NDIRS - 1);
SAME_VALUE(SyncKind_MAX, RSF_SYNC_NKINDS - 1);
SAME_VALUE(CollOp_MAX, RSF_COLL_NOPS - 1);
SAME_VALUE(CommKind_MAX, RSF_COMM_NKINDS - 1);
SAME_VALUE(MemKind_MAX, RSF_MEM_NKINDS - 1);
SAME_VALUE(SampleKind_MAX, RSF_SAMPLE_NKINDS - 1);
SAME_VALUE(WaitReason_none, RSF_WAIT_NONE);
SAME_VALUE(WaitReason_cuda_sync, RSF_WAIT_CUDA_SYNC);
SAME_VALUE(WaitReason_MAX, RSF_WAIT_NREASONS - 1);
SAME_VALUE(RangeKind_push, RSF_RANGE_PUSH);
SAME_VALUE(RangeKind_start, RSF_RANGE_START);
SAME_VALUE(RangeKind_mark, RSF_RANGE_MARK);
SAME_VALUE(RangeKind_MAX, RSF_RANGE_NKINDS - 1);
SAME_VALUE(SeriesKind_MAX, RSF_SERIES_NKINDS - 1);
SAME_VALUE(LinkKind_MAX, RSF_LINK_NKINDS - 1);

// A field's vtable entry sits at 4 + 2 x slot; the last slot + 1 is the count.
#define SLOT(table, VT, C) static_assert(ringside::table::VT == 4 + 2 * (C), #table "." #VT)
SLOT(Setting, VT_KEY, RSF_SETTING_KEY);
SLOT(Setting, VT_VALUE, RSF_SETTING_VALUE);
static_assert(ringside::Setting::VT_VALUE == 2 + 2 * RSF_SETTING_NSLOTS, "Setting slots");
SLOT(Meta, VT_FORMAT_VERSION, RSF_META_FORMAT_VERSION);
SLOT(Meta, VT_HOST, RSF_META_HOST);
SLOT(Meta, VT_PID, RSF_META_PID);
SLOT(Meta, VT_PPID, RSF_META_PPID);
SLOT(Meta, VT_RANK, RSF_META_RANK);
SLOT(Meta, VT_LOCAL_RANK, RSF_META_LOCAL_RANK);
SLOT(Meta, VT_WORLD_SIZE, RSF_META_WORLD_SIZE);
SLOT(Meta, VT_PARENT_RANK, RSF_META_PARENT_RANK);
SLOT(Meta, VT_ROLE, RSF_META_ROLE);
SLOT(Meta, VT_JOB, RSF_META_JOB);
SLOT(Meta, VT_ARGV, RSF_META_ARGV);
SLOT(Meta, VT_START, RSF_META_START);
SLOT(Meta, VT_SETTINGS, RSF_META_SETTINGS);
SLOT(Meta, VT_AGENT_VERSION, RSF_META_AGENT_VERSION);
SLOT(Meta, VT_CUDA_VERSION, RSF_META_CUDA_VERSION);
SLOT(Meta, VT_NCCL_VERSION, RSF_META_NCCL_VERSION);
static_assert(ringside::Meta::VT_NCCL_VERSION == 2 + 2 * RSF_META_NSLOTS, "Meta slots");
SLOT(Counters, VT_RECORDED, RSF_COUNTERS_RECORDED);
SLOT(Counters, VT_DROPPED, RSF_COUNTERS_DROPPED);
SLOT(Counters, VT_DROPPED_IO, RSF_COUNTERS_DROPPED_IO);
SLOT(Counters, VT_DROPPED_GPU, RSF_COUNTERS_DROPPED_GPU);
SLOT(Counters, VT_DROPPED_NCCL, RSF_COUNTERS_DROPPED_NCCL);
SLOT(Counters, VT_DROPPED_SAMPLES, RSF_COUNTERS_DROPPED_SAMPLES);
SLOT(Counters, VT_DROPPED_RANGES, RSF_COUNTERS_DROPPED_RANGES);
static_assert(ringside::Counters::VT_DROPPED_RANGES == 2 + 2 * RSF_COUNTERS_NSLOTS, "Counters slots");
SLOT(Stack, VT_ID, RSF_STACK_ID);
SLOT(Stack, VT_FRAMES, RSF_STACK_FRAMES);
static_assert(ringside::Stack::VT_FRAMES == 2 + 2 * RSF_STACK_NSLOTS, "Stack slots");
SLOT(Chunk, VT_SEQ, RSF_CHUNK_SEQ);
SLOT(Chunk, VT_META, RSF_CHUNK_META);
SLOT(Chunk, VT_STRINGS_BASE, RSF_CHUNK_STRINGS_BASE);
SLOT(Chunk, VT_STRINGS, RSF_CHUNK_STRINGS);
SLOT(Chunk, VT_FILES, RSF_CHUNK_FILES);
SLOT(Chunk, VT_THREADS, RSF_CHUNK_THREADS);
SLOT(Chunk, VT_CLOCKS, RSF_CHUNK_CLOCKS);
SLOT(Chunk, VT_IO, RSF_CHUNK_IO);
SLOT(Chunk, VT_COUNTERS, RSF_CHUNK_COUNTERS);
SLOT(Chunk, VT_END, RSF_CHUNK_END);
SLOT(Chunk, VT_GPU, RSF_CHUNK_GPU);
SLOT(Chunk, VT_SYNCS, RSF_CHUNK_SYNCS);
SLOT(Chunk, VT_COLLS, RSF_CHUNK_COLLS);
SLOT(Chunk, VT_COMMS, RSF_CHUNK_COMMS);
SLOT(Chunk, VT_MEMS, RSF_CHUNK_MEMS);
SLOT(Chunk, VT_STACKS, RSF_CHUNK_STACKS);
SLOT(Chunk, VT_SAMPLES, RSF_CHUNK_SAMPLES);
SLOT(Chunk, VT_MODULES, RSF_CHUNK_MODULES);
SLOT(Chunk, VT_RANGES, RSF_CHUNK_RANGES);
SLOT(Chunk, VT_LAUNCHES, RSF_CHUNK_LAUNCHES);
SLOT(Chunk, VT_FUNCTIONS, RSF_CHUNK_FUNCTIONS);
SLOT(Chunk, VT_DEVICES, RSF_CHUNK_DEVICES);
SLOT(Chunk, VT_SERIES, RSF_CHUNK_SERIES);
SLOT(Chunk, VT_POINTS, RSF_CHUNK_POINTS);
SLOT(Chunk, VT_COLL_GROUPS, RSF_CHUNK_COLL_GROUPS);
SLOT(Chunk, VT_GRAPH_NODES, RSF_CHUNK_GRAPH_NODES);
SLOT(Chunk, VT_GRAPH_EDGES, RSF_CHUNK_GRAPH_EDGES);
SLOT(Chunk, VT_MARKS, RSF_CHUNK_MARKS);
SLOT(Chunk, VT_MEM_INFO, RSF_CHUNK_MEM_INFO);
static_assert(ringside::Chunk::VT_MEM_INFO == 2 + 2 * RSF_CHUNK_NSLOTS, "Chunk slots");

// ---- run time: what C++ keeps private (struct field offsets) and names ----

static int failures;

static void fail(const std::string &what)
{
    std::fprintf(stderr, "flatc_verify: %s\n", what.c_str());
    failures++;
}

struct cfield {
    const char *name;
    size_t offset, size;
};
#define CF(type, f) { #f, offsetof(struct type, f), sizeof(((struct type *)0)->f) }

static const cfield clock_pair_fields[] = { CF(rsf_clock_pair, mono_ns), CF(rsf_clock_pair, real_ns) };
static const cfield io_event_fields[] = {
    CF(rsf_io_event, start_ns), CF(rsf_io_event, dur_ns), CF(rsf_io_event, offset),
    CF(rsf_io_event, result), CF(rsf_io_event, file), CF(rsf_io_event, tid), CF(rsf_io_event, op),
};
static const cfield file_ref_fields[] = { CF(rsf_file_ref, id), CF(rsf_file_ref, path),
                                          CF(rsf_file_ref, flags) };
static const cfield thread_ref_fields[] = { CF(rsf_thread_ref, tid), CF(rsf_thread_ref, name) };
static const cfield gpu_event_fields[] = {
    CF(rsf_gpu_event, launch_ns), CF(rsf_gpu_event, gpu_start_ns), CF(rsf_gpu_event, gpu_end_ns),
    CF(rsf_gpu_event, stream), CF(rsf_gpu_event, bytes), CF(rsf_gpu_event, call_ns),
    CF(rsf_gpu_event, tid), CF(rsf_gpu_event, name), CF(rsf_gpu_event, device),
    CF(rsf_gpu_event, kind), CF(rsf_gpu_event, dir), CF(rsf_gpu_event, flags), CF(rsf_gpu_event, graph),
};
static const cfield sync_event_fields[] = {
    CF(rsf_sync_event, start_ns), CF(rsf_sync_event, dur_ns), CF(rsf_sync_event, target),
    CF(rsf_sync_event, tid), CF(rsf_sync_event, kind),
};
static const cfield coll_event_fields[] = {
    CF(rsf_coll_event, launch_ns), CF(rsf_coll_event, gpu_start_ns), CF(rsf_coll_event, gpu_end_ns),
    CF(rsf_coll_event, count), CF(rsf_coll_event, bytes), CF(rsf_coll_event, comm),
    CF(rsf_coll_event, stream), CF(rsf_coll_event, call_ns), CF(rsf_coll_event, tid),
    CF(rsf_coll_event, seq), CF(rsf_coll_event, peer), CF(rsf_coll_event, op),
    CF(rsf_coll_event, datatype), CF(rsf_coll_event, redop), CF(rsf_coll_event, group),
    CF(rsf_coll_event, flags),
};
static const cfield comm_event_fields[] = {
    CF(rsf_comm_event, start_ns), CF(rsf_comm_event, dur_ns), CF(rsf_comm_event, comm),
    CF(rsf_comm_event, handle), CF(rsf_comm_event, parent), CF(rsf_comm_event, tid),
    CF(rsf_comm_event, rank), CF(rsf_comm_event, nranks), CF(rsf_comm_event, device),
    CF(rsf_comm_event, kind),
};
static const cfield mem_event_fields[] = {
    CF(rsf_mem_event, start_ns), CF(rsf_mem_event, dur_ns), CF(rsf_mem_event, ptr),
    CF(rsf_mem_event, bytes), CF(rsf_mem_event, tid), CF(rsf_mem_event, kind),
};
static const cfield mem_info_fields[] = {
    CF(rsf_mem_info, stream), CF(rsf_mem_info, stack), CF(rsf_mem_info, device), CF(rsf_mem_info, result),
    CF(rsf_mem_info, asked), CF(rsf_mem_info, flags),
};
static const cfield frame_fields[] = { CF(rsf_frame, addr) };
static const cfield sample_fields[] = {
    CF(rsf_sample, ts_ns), CF(rsf_sample, weight_ns), CF(rsf_sample, tid), CF(rsf_sample, stack),
    CF(rsf_sample, kind), CF(rsf_sample, reason),
};
static const cfield module_fields[] = {
    CF(rsf_module, ts_ns), CF(rsf_module, start), CF(rsf_module, end), CF(rsf_module, file_off),
    CF(rsf_module, path), CF(rsf_module, build_id),
};
static const cfield range_fields[] = {
    CF(rsf_range, start_ns), CF(rsf_range, end_ns), CF(rsf_range, tid), CF(rsf_range, end_tid),
    CF(rsf_range, name), CF(rsf_range, domain), CF(rsf_range, category), CF(rsf_range, depth),
    CF(rsf_range, kind), CF(rsf_range, flags),
};
static const cfield launch_fields[] = {
    CF(rsf_launch, grid_x), CF(rsf_launch, grid_y), CF(rsf_launch, grid_z), CF(rsf_launch, smem_dyn),
    CF(rsf_launch, func), CF(rsf_launch, block_x), CF(rsf_launch, block_y), CF(rsf_launch, block_z),
    CF(rsf_launch, cluster_x), CF(rsf_launch, cluster_y), CF(rsf_launch, cluster_z),
};
static const cfield function_fields[] = {
    CF(rsf_function, id), CF(rsf_function, name), CF(rsf_function, static_smem),
    CF(rsf_function, local_bytes), CF(rsf_function, max_threads), CF(rsf_function, regs),
    CF(rsf_function, device), CF(rsf_function, binary_version),
};
static const cfield device_fields[] = {
    CF(rsf_device, ordinal), CF(rsf_device, cc_major), CF(rsf_device, cc_minor),
    CF(rsf_device, sm_count), CF(rsf_device, max_threads_per_sm), CF(rsf_device, max_blocks_per_sm),
    CF(rsf_device, regs_per_sm), CF(rsf_device, smem_per_sm), CF(rsf_device, max_threads_per_block),
    CF(rsf_device, regs_per_block), CF(rsf_device, smem_per_block_optin),
    CF(rsf_device, smem_reserved_per_block), CF(rsf_device, warp_size), CF(rsf_device, clock_khz),
    CF(rsf_device, name), CF(rsf_device, uuid), CF(rsf_device, pci),
};
static const cfield series_fields[] = {
    CF(rsf_series, rate), CF(rsf_series, id), CF(rsf_series, name), CF(rsf_series, device),
    CF(rsf_series, kind), CF(rsf_series, link),
};
static const cfield point_fields[] = { CF(rsf_point, ts_ns), CF(rsf_point, value), CF(rsf_point, series) };
static const cfield coll_group_fields[] = { CF(rsf_coll_group, group) };
static const cfield graph_node_fields[] = {
    CF(rsf_graph_node, bytes), CF(rsf_graph_node, comm), CF(rsf_graph_node, graph), CF(rsf_graph_node, node),
    CF(rsf_graph_node, name), CF(rsf_graph_node, stack), CF(rsf_graph_node, grid_x), CF(rsf_graph_node, grid_y),
    CF(rsf_graph_node, grid_z), CF(rsf_graph_node, smem_dyn), CF(rsf_graph_node, func),
    CF(rsf_graph_node, block_x), CF(rsf_graph_node, block_y), CF(rsf_graph_node, block_z),
    CF(rsf_graph_node, device), CF(rsf_graph_node, kind), CF(rsf_graph_node, op), CF(rsf_graph_node, dir),
};
static const cfield graph_edge_fields[] = { CF(rsf_graph_edge, graph), CF(rsf_graph_edge, from), CF(rsf_graph_edge, to) };
static const cfield mark_fields[] = {
    CF(rsf_mark, ts_ns), CF(rsf_mark, since_ns), CF(rsf_mark, tid), CF(rsf_mark, stack), CF(rsf_mark, kind),
    CF(rsf_mark, sig),
};

// flatc's struct type table lists each field's offset and, after them, the
// struct's size; a field's size is the gap to the next offset less padding,
// so it is taken from the element type instead.
static size_t elem_size(unsigned base_type)
{
    switch (base_type) {
    case fb::ET_BOOL: case fb::ET_CHAR: case fb::ET_UCHAR: return 1;
    case fb::ET_SHORT: case fb::ET_USHORT: return 2;
    case fb::ET_INT: case fb::ET_UINT: case fb::ET_FLOAT: return 4;
    case fb::ET_LONG: case fb::ET_ULONG: case fb::ET_DOUBLE: return 8;
    default: return 0;
    }
}

template <size_t N>
static void check_struct(const char *name, const fb::TypeTable *tt, const cfield (&c)[N], size_t csize)
{
    if (tt->num_elems != N) {
        fail(std::string(name) + ": field count differs from trace.h");
        return;
    }
    for (size_t i = 0; i < N; i++) {
        std::string where = std::string(name) + "." + c[i].name;
        if (std::strcmp(tt->names[i], c[i].name) != 0)
            fail(where + ": flatc names this field " + tt->names[i]);
        if ((size_t)tt->values[i] != c[i].offset)
            fail(where + ": offset " + std::to_string(c[i].offset) + ", flatc says " +
                 std::to_string(tt->values[i]));
        if (elem_size(tt->type_codes[i].base_type) != c[i].size)
            fail(where + ": size differs from flatc's");
    }
    if ((size_t)tt->values[N] != csize)
        fail(std::string(name) + ": size differs from flatc's");
}

// The field kind of formats/chunk.c's descriptors that a flatc type code means.
static int kind_of(const fb::TypeCode &tc, const fb::TypeTable *ref)
{
    switch (tc.base_type) {
    case fb::ET_BOOL: return tc.is_repeating ? -1 : RSF_F_BOOL;
    case fb::ET_UCHAR: return tc.is_repeating ? -1 : RSF_F_U8;
    case fb::ET_UINT: return tc.is_repeating ? -1 : RSF_F_U32;
    case fb::ET_INT: return tc.is_repeating ? -1 : RSF_F_I32;
    case fb::ET_ULONG: return tc.is_repeating ? -1 : RSF_F_U64;
    case fb::ET_LONG: return tc.is_repeating ? -1 : RSF_F_I64;
    case fb::ET_STRING: return tc.is_repeating ? RSF_F_VEC_STRING : RSF_F_STRING;
    case fb::ET_SEQUENCE:
        if (ref->st == fb::ST_STRUCT)
            return tc.is_repeating ? RSF_F_VEC_STRUCT : RSF_F_STRUCT;
        if (ref->st == fb::ST_TABLE)
            return tc.is_repeating ? RSF_F_VEC_TABLE : RSF_F_TABLE;
        return -1;
    default: return -1;
    }
}

// Walks a C table descriptor and flatc's type table side by side.
static void check_table(const char *name, const struct rsf_table_desc *d, const fb::TypeTable *tt)
{
    if (d->nfields != tt->num_elems) {
        fail(std::string(name) + ": " + std::to_string(d->nfields) + " fields in the descriptor, " +
             std::to_string(tt->num_elems) + " in trace.fbs");
        return;
    }
    for (size_t i = 0; i < tt->num_elems; i++) {
        const struct rsf_field_desc *f = &d->fields[i];
        const fb::TypeCode &tc = tt->type_codes[i];
        const fb::TypeTable *ref =
            tc.sequence_ref >= 0 && tt->type_refs ? tt->type_refs[tc.sequence_ref]() : nullptr;
        std::string where = std::string(name) + "." + tt->names[i];
        if (std::strcmp(f->name, tt->names[i]) != 0)
            fail(where + ": the descriptor names slot " + std::to_string(i) + " " + f->name);
        // An enum field is its underlying scalar; its type ref is the enum.
        if (f->kind != kind_of(tc, tc.base_type == fb::ET_SEQUENCE ? ref : nullptr)) {
            fail(where + ": kind differs from trace.fbs");
            continue;
        }
        if ((f->kind == RSF_F_STRUCT || f->kind == RSF_F_VEC_STRUCT) &&
            (size_t)ref->values[ref->num_elems] != f->size)
            fail(where + ": struct size differs from trace.fbs");
        if (f->kind == RSF_F_TABLE || f->kind == RSF_F_VEC_TABLE)
            check_table(tt->names[i], f->table, ref);
    }
}

static void check_schema()
{
    check_struct("ClockPair", ringside::ClockPairTypeTable(), clock_pair_fields,
                 sizeof(struct rsf_clock_pair));
    check_struct("IoEvent", ringside::IoEventTypeTable(), io_event_fields, sizeof(struct rsf_io_event));
    check_struct("FileRef", ringside::FileRefTypeTable(), file_ref_fields, sizeof(struct rsf_file_ref));
    check_struct("ThreadRef", ringside::ThreadRefTypeTable(), thread_ref_fields,
                 sizeof(struct rsf_thread_ref));
#define CHECK_STRUCT(gen, c, fields) \
    check_struct(#gen, ringside::gen##TypeTable(), fields, sizeof(struct c))
    CHECK_STRUCT(GpuEvent, rsf_gpu_event, gpu_event_fields);
    CHECK_STRUCT(SyncEvent, rsf_sync_event, sync_event_fields);
    CHECK_STRUCT(CollEvent, rsf_coll_event, coll_event_fields);
    CHECK_STRUCT(CommEvent, rsf_comm_event, comm_event_fields);
    CHECK_STRUCT(MemEvent, rsf_mem_event, mem_event_fields);
    CHECK_STRUCT(Frame, rsf_frame, frame_fields);
    CHECK_STRUCT(Sample, rsf_sample, sample_fields);
    CHECK_STRUCT(Module, rsf_module, module_fields);
    CHECK_STRUCT(Range, rsf_range, range_fields);
    CHECK_STRUCT(Launch, rsf_launch, launch_fields);
    CHECK_STRUCT(Function, rsf_function, function_fields);
    CHECK_STRUCT(Device, rsf_device, device_fields);
    CHECK_STRUCT(Series, rsf_series, series_fields);
    CHECK_STRUCT(Point, rsf_point, point_fields);
    CHECK_STRUCT(CollGroup, rsf_coll_group, coll_group_fields);
    CHECK_STRUCT(GraphNode, rsf_graph_node, graph_node_fields);
    CHECK_STRUCT(GraphEdge, rsf_graph_edge, graph_edge_fields);
    CHECK_STRUCT(Mark, rsf_mark, mark_fields);
    CHECK_STRUCT(MemInfo, rsf_mem_info, mem_info_fields);
#undef CHECK_STRUCT
    check_table("Chunk", &rsf_chunk_desc, ringside::ChunkTypeTable());
    for (unsigned op = 0; op <= ringside::IoOp_MAX; op++) {
        const char *mine = rsf_io_op_name(op);
        const char *theirs = ringside::EnumNameIoOp(static_cast<ringside::IoOp>(op));
        if (!mine || std::strcmp(mine, theirs) != 0)
            fail("IoOp " + std::to_string(op) + ": trace.h says " + (mine ? mine : "(none)") +
                 ", trace.fbs " + theirs);
    }
    if (rsf_io_op_name(ringside::IoOp_MAX + 1) != nullptr)
        fail("rsf_io_op_name names a value past the end of IoOp");
    for (unsigned k = 0; k <= ringside::RangeKind_MAX; k++) {
        const char *mine = rsf_range_kind_name(k);
        const char *theirs = ringside::EnumNameRangeKind(static_cast<ringside::RangeKind>(k));
        if (!mine || std::strcmp(mine, theirs) != 0)
            fail("RangeKind " + std::to_string(k) + ": trace.h says " + (mine ? mine : "(none)") +
                 ", trace.fbs " + theirs);
    }
    if (rsf_range_kind_name(ringside::RangeKind_MAX + 1) != nullptr)
        fail("rsf_range_kind_name names a value past the end of RangeKind");
    for (unsigned k = 0; k <= ringside::SeriesKind_MAX; k++) {
        const char *mine = rsf_series_kind_name(k);
        const char *theirs = ringside::EnumNameSeriesKind(static_cast<ringside::SeriesKind>(k));
        if (!mine || std::strcmp(mine, theirs) != 0)
            fail("SeriesKind " + std::to_string(k) + ": trace.h says " + (mine ? mine : "(none)") +
                 ", trace.fbs " + theirs);
    }
    for (unsigned k = 0; k <= ringside::GraphNodeKind_MAX; k++) {
        const char *mine = rsf_graph_node_kind_name(k);
        const char *theirs = ringside::EnumNameGraphNodeKind(static_cast<ringside::GraphNodeKind>(k));
        if (!mine || std::strcmp(mine, theirs) != 0)
            fail("GraphNodeKind " + std::to_string(k) + ": trace.h says " + (mine ? mine : "(none)") +
                 ", trace.fbs " + theirs);
    }
    if (rsf_graph_node_kind_name(ringside::GraphNodeKind_MAX + 1) != nullptr)
        fail("rsf_graph_node_kind_name names a value past the end of GraphNodeKind");
    for (unsigned k = 0; k <= ringside::MarkKind_MAX; k++) {
        const char *mine = rsf_mark_kind_name(k);
        const char *theirs = ringside::EnumNameMarkKind(static_cast<ringside::MarkKind>(k));
        if (!mine || std::strcmp(mine, theirs) != 0)
            fail("MarkKind " + std::to_string(k) + ": trace.h says " + (mine ? mine : "(none)") +
                 ", trace.fbs " + theirs);
    }
    if (rsf_mark_kind_name(ringside::MarkKind_MAX + 1) != nullptr)
        fail("rsf_mark_kind_name names a value past the end of MarkKind");
    for (unsigned k = 0; k <= ringside::LinkKind_MAX; k++) {
        const char *mine = rsf_link_kind_name(k);
        const char *theirs = ringside::EnumNameLinkKind(static_cast<ringside::LinkKind>(k));
        if (!mine || std::strcmp(mine, theirs) != 0)
            fail("LinkKind " + std::to_string(k) + ": trace.h says " + (mine ? mine : "(none)") +
                 ", trace.fbs " + theirs);
    }
}

// One size-prefixed Chunk per file, as flatc -b --size-prefixed writes it.
static void verify_file(const char *path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        fail(std::string(path) + ": cannot open");
        return;
    }
    std::vector<uint8_t> buf((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fb::Verifier v(buf.data(), buf.size());
    if (!ringside::VerifySizePrefixedChunkBuffer(v))
        fail(std::string(path) + ": flatbuffers' Verifier rejects it");
}

int main(int argc, char **argv)
{
    check_schema();
    for (int i = 1; i < argc; i++)
        verify_file(argv[i]);
    return failures ? 1 : 0;
}
