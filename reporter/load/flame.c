/* Flame graph data (see flame.h): reads the stacks, samples, module maps and
 * thread names of each trace file, adds up the samples of one kind per
 * (thread, stack, module map in force), then symbolises each stack's frames
 * (Python frames by their string, native ones through symbolize.c, inlined
 * callers included) into one call tree shared by all the files. */
#include "reporter/load/flame.h"
#include "reporter/load/memory.h"
#include "reporter/load/graphs.h"
#include "reporter/load/load.h"
#include "reporter/load/symbolize.h"
#include "reporter/load/waits.h"
#include "reporter/base/array.h"
#include "formats/trace.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rsr_flame_init(struct rsr_flame *fl, int kind)
{
    memset(fl, 0, sizeof *fl);
    fl->kind = kind;
    fl->capnodes = 1024;
    fl->nodes = rsr_xcalloc(fl->capnodes, sizeof *fl->nodes);
    fl->nnodes = 1;
}

void rsr_flame_free(struct rsr_flame *fl)
{
    rsr_intern_free(&fl->names);
    rsr_intern_free(&fl->modules);
    free(fl->name_class);
    free(fl->name_module);
    free(fl->nodes);
    rsr_table_free(&fl->children);
    for (uint32_t i = 0; i < fl->nunnamed; i++) {
        free(fl->unnamed[i].path);
        free(fl->unnamed[i].why);
    }
    free(fl->unnamed);
    memset(fl, 0, sizeof *fl);
}

struct rsr_flame_unnamed *rsr_flame_unnamed_of(struct rsr_flame *fl, const char *path, const char *why)
{
    for (uint32_t i = 0; i < fl->nunnamed; i++)
        if (strcmp(fl->unnamed[i].path, path) == 0 && strcmp(fl->unnamed[i].why, why) == 0)
            return &fl->unnamed[i];
    if (fl->nunnamed == fl->capunnamed) {
        fl->capunnamed = fl->capunnamed ? fl->capunnamed * 2 : 16;
        fl->unnamed = rsr_xrealloc(fl->unnamed, fl->capunnamed * sizeof *fl->unnamed);
    }
    struct rsr_flame_unnamed *u = &fl->unnamed[fl->nunnamed++];
    *u = (struct rsr_flame_unnamed){ rsr_xstrdup(path), rsr_xstrdup(why), 0, 0, 0 };
    return u;
}

uint32_t rsr_flame_frame(struct rsr_flame *fl, const char *name, enum rsr_frame_class cls,
                         const char *module)
{
    uint32_t before = fl->names.n;
    uint32_t id = rsr_intern(&fl->names, name);
    const char *mod = module ? module : "";
    if (id < before) {
        /* A name met again, in another module or as another class (a
         * function@plt of several objects, a static function's name in two
         * libraries): the name keeps the least class and module, so that
         * the graphs do not depend on the order the files came in (nor on
         * how MPI processes shared them). */
        if (cls > fl->name_class[id])
            return id;
        if (cls == fl->name_class[id] && strcmp(mod, rsr_intern_str(&fl->modules, fl->name_module[id])) >= 0)
            return id;
        fl->name_class[id] = (uint8_t)cls;
        fl->name_module[id] = rsr_intern(&fl->modules, mod);
        return id;
    }
    if (id >= fl->ncap) {
        /* two arrays of one length */
        uint32_t cap = fl->ncap;
        RSR_XGROW(fl->name_class, cap, (size_t)id + 1, 1024);
        RSR_XGROW(fl->name_module, fl->ncap, (size_t)id + 1, 1024);
    }
    fl->name_class[id] = (uint8_t)cls;
    fl->name_module[id] = rsr_intern(&fl->modules, mod);
    return id;
}

static uint64_t child_hash(uint32_t parent, uint32_t name)
{
    return rsr_hash_u64(((uint64_t)parent << 32) | name);
}

static uint64_t node_hash_of(const void *ctx, size_t n)
{
    const struct rsr_flame_node *c = &((const struct rsr_flame *)ctx)->nodes[n];
    return child_hash(c->parent, c->name);
}

/* The node under parent named name, or 0 when there is none (*p: where it
 * would go). */
static uint32_t walk_children(const struct rsr_flame *fl, uint32_t parent, uint32_t name, struct rsr_probe *p)
{
    *p = rsr_table_probe(&fl->children, child_hash(parent, name));
    for (long n; (n = rsr_table_next(&fl->children, p)) >= 0;) {
        const struct rsr_flame_node *c = &fl->nodes[n];
        if (c->parent == parent && c->name == name)
            return (uint32_t)n;
    }
    return 0;
}

/* The node under parent named name, or 0 when there is none. */
static uint32_t find_child(const struct rsr_flame *fl, uint32_t parent, uint32_t name)
{
    struct rsr_probe p;
    return walk_children(fl, parent, name, &p);
}

static uint32_t child_of(struct rsr_flame *fl, uint32_t parent, uint32_t name)
{
    struct rsr_probe p;
    uint32_t found = walk_children(fl, parent, name, &p);
    if (found)
        return found;
    RSR_XGROW(fl->nodes, fl->capnodes, (size_t)fl->nnodes + 1, 1024);
    uint32_t n = fl->nnodes++;
    fl->nodes[n] = (struct rsr_flame_node){ .name = name, .parent = parent,
                                            .next_sibling = fl->nodes[parent].first_child };
    fl->nodes[parent].first_child = n;
    if (rsr_table_put(&fl->children, &p, n, 2048, node_hash_of, fl) != 0)
        rsr_out_of_memory();
    return n;
}

void rsr_flame_add(struct rsr_flame *fl, const uint32_t *frames, uint32_t n, uint64_t weight,
                   uint64_t count)
{
    uint32_t node = 0;
    fl->nodes[0].total += weight;
    fl->nodes[0].count += count;
    for (uint32_t i = 0; i < n; i++) {
        node = child_of(fl, node, frames[i]);
        fl->nodes[node].total += weight;
        fl->nodes[node].count += count;
    }
    fl->nodes[node].self += weight;
}

static const struct rsr_flame *sort_fl;

static int by_name(const void *a, const void *b)
{
    const struct rsr_flame_node *x = &sort_fl->nodes[*(const uint32_t *)a];
    const struct rsr_flame_node *y = &sort_fl->nodes[*(const uint32_t *)b];
    return strcmp(rsr_intern_str(&sort_fl->names, x->name), rsr_intern_str(&sort_fl->names, y->name));
}

uint32_t *rsr_flame_children(const struct rsr_flame *fl, uint32_t node, uint32_t *n)
{
    uint32_t k = 0;
    for (uint32_t c = fl->nodes[node].first_child; c; c = fl->nodes[c].next_sibling)
        k++;
    uint32_t *list = rsr_xmalloc((k ? k : 1) * sizeof *list);
    k = 0;
    for (uint32_t c = fl->nodes[node].first_child; c; c = fl->nodes[c].next_sibling)
        list[k++] = c;
    sort_fl = fl;
    qsort(list, k, sizeof *list, by_name);
    *n = k;
    return list;
}

/* The path so far, as folded text, grows and shrinks with the walk. */
struct folded_walk {
    FILE *f;
    char *buf;
    size_t len, cap;
};

static void put_name(struct folded_walk *w, const char *s)
{
    size_t n = strlen(s);
    if (w->len + n + 2 > w->cap) {
        w->cap = (w->len + n + 2) * 2;
        w->buf = rsr_xrealloc(w->buf, w->cap);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        w->buf[w->len++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
}

static void fold(struct folded_walk *w, const struct rsr_flame *fl, uint32_t node)
{
    const struct rsr_flame_node *nd = &fl->nodes[node];
    size_t mark = w->len;
    if (node) {
        if (w->len)
            w->buf[w->len++] = ';';
        put_name(w, rsr_intern_str(&fl->names, nd->name));
        if (nd->self)
            fprintf(w->f, "%.*s %" PRIu64 "\n", (int)w->len, w->buf, nd->self);
    }
    uint32_t n;
    uint32_t *kids = rsr_flame_children(fl, node, &n);
    for (uint32_t i = 0; i < n; i++)
        fold(w, fl, kids[i]);
    free(kids);
    w->len = mark;
}

int rsr_flame_write_folded(FILE *f, const struct rsr_flame *fl)
{
    struct folded_walk w = { .f = f, .cap = 4096 };
    w.buf = rsr_xmalloc(w.cap);
    fold(&w, fl, 0);
    free(w.buf);
    return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

int rsr_flame_read_folded(FILE *f, struct rsr_flame *fl)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    uint32_t *frames = NULL, n = 0, capf = 0;
    int bad = 0;
    while ((len = getline(&line, &cap, f)) > 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = 0;
        char *sp = strrchr(line, ' '), *end;
        if (!len)
            continue;
        unsigned long long w = sp ? strtoull(sp + 1, &end, 10) : 0;
        if (!sp || sp == line || !sp[1] || *end) {
            bad = 1;
            continue;
        }
        *sp = 0;
        n = 0;
        uint64_t deeper = 0;
        for (char *name = line, *semi;; name = semi + 1) {
            semi = strchr(name, ';');
            if (semi)
                *semi = 0;
            if (n == capf) {
                capf = capf ? capf * 2 : 64;
                frames = rsr_xrealloc(frames, capf * sizeof *frames);
            }
            if (n < RSR_FLAME_DEPTH_MAX)
                frames[n++] = rsr_flame_frame(fl, name, RSR_FRAME_NATIVE, "");
            else
                deeper++;
            if (!semi)
                break;
        }
        if (deeper) {
            /* the last frame kept stands for itself and what was below it */
            char more[48];
            snprintf(more, sizeof more, "[%" PRIu64 " frames deeper]", deeper + 1);
            frames[n - 1] = rsr_flame_frame(fl, more, RSR_FRAME_NATIVE, "");
        }
        rsr_flame_add(fl, frames, n, w, 1);
    }
    free(frames);
    free(line);
    return ferror(f) ? -1 : bad;
}

uint32_t *rsr_flame_match(const struct rsr_flame *fl, struct rsr_flame *other)
{
    uint32_t *map = rsr_xmalloc(fl->nnodes * sizeof *map);
    map[0] = 0;
    /* a node's parent comes before it (child_of appends) */
    for (uint32_t i = 1; i < fl->nnodes; i++) {
        const struct rsr_flame_node *nd = &fl->nodes[i];
        uint32_t up = map[nd->parent];
        map[i] = UINT32_MAX;
        if (up == UINT32_MAX)
            continue;
        uint32_t name = rsr_flame_frame(other, rsr_intern_str(&fl->names, nd->name),
                                        (enum rsr_frame_class)fl->name_class[nd->name],
                                        rsr_intern_str(&fl->modules, fl->name_module[nd->name]));
        uint32_t c = find_child(other, up, name);
        map[i] = c ? c : UINT32_MAX;
    }
    return map;
}

/* ---- reading one trace file ---- */

struct stack_def {
    uint32_t id, nframes;
    uint64_t *frames;           /* innermost first */
};

struct module_rec {
    struct rsf_module m;
    uint32_t order;             /* file order, breaks ts ties */
    int file;                   /* symboliser handle; -2: not asked yet */
    int have_bias;
    uint64_t bias;
};

struct modcache {
    uint64_t pc, map_ts;
    struct module_rec *m;       /* NULL: in no module */
};

/* Samples added up: one per (thread, stack, module map in force). */
struct agg {
    uint32_t tid, stack;
    uint64_t map_ts;            /* latest module record time <= the samples' */
    uint64_t weight, count;
    uint8_t kind;               /* enum rsf_sample_kind */
    uint8_t reason;             /* enum rsf_wait_reason: the leaf of a wait stack */
    uint32_t leaf;              /* a CUDA graph node's time: its name in gnames + 1 */
};

/* GPU time of one launching thread. The agent records the stack of one
 * timed kernel launch in RINGSIDE_GPU_STACK_EVERY per thread, weighted with
 * that kernel's GPU time (sampled_ns); the thread's kernels' GPU time in
 * all (kernel_ns) scales them, so that the GPU flame graph adds up to the
 * kernel table. Copies, sets and CUDA graph launches of a graph whose nodes
 * are not known have no stack: they are their own frames (other_ns by
 * class). A graph launch whose nodes are known is shared among them as the
 * kernel table shares it (graphs.h), each node's share under the stack that
 * captured it, the node's name as the leaf. */
enum { GPU_OTHER_COPY, GPU_OTHER_GRAPH, GPU_NOTHER };
struct gpu_thread {
    uint32_t tid;
    uint64_t kernel_ns, sampled_ns, other_ns[GPU_NOTHER];
};

struct proc {
    const char *file;
    const struct rsr_flame_opts *opts;
    int rank, skip;
    uint32_t pid;               /* the process's, its main thread's id */
    uint8_t role;               /* enum rsf_role */
    int read_errno;             /* the file could not be read */
    char **strings;
    uint32_t nstrings;
    struct stack_def *stacks;   /* sorted by id after the walk */
    uint32_t nstacks, capstacks;
    struct module_rec *mods;
    uint32_t nmods, capmods;
    uint64_t *mod_ts;           /* sorted times of module records seen so far */
    uint32_t nmod_ts;
    struct { uint32_t tid, name; } *threads;
    uint32_t nthreads, capthreads;
    struct agg *aggs;           /* in the order first seen */
    size_t naggs, capaggs;
    struct rsr_table agg_table; /* (thread, stack, map, kind, reason, leaf) -> its aggregate */
    struct modcache *mcache;    /* (pc, map time) -> module record */
    size_t nmcache, capmcache;
    struct rsr_table mcache_table;
    struct gpu_thread *gth;     /* threads that launched GPU work */
    uint32_t ngth, capgth;
    uint32_t stack_every;       /* the agent's gpu_stack_every; 0: not recorded */
    int64_t real_off;           /* real-time ns less monotonic ns, from its start */
    /* Only samples inside the window (opts' from/to, or its spans): pairs
     * [lo, hi), sorted and apart, on the job's time line: the file's clock
     * plus real_off, or plus clock_off when has_clock_off (the spans'). */
    const int64_t *win;
    size_t nwin;
    int has_clock_off;
    int64_t clock_off;
    struct rsr_graphs *graphs;  /* CUDA graphs' nodes; NULL until needed */
    /* its memory calls' live blocks, for the memory graph (memory.h): what
     * each allocating stack held at the peak; NULL: none (or not wanted) */
    struct rsr_memlive *mem;
    uint64_t mem_always, mem_every; /* the agent's sampling of allocation stacks (memory.h), bytes */
    uint32_t mem_grow_stack;    /* the stack whose memory grows (rsr_memlive_growing), 0: none */
    uint64_t mem_grow_bytes;
    struct rsr_intern gnames;   /* kernel and node names, for graphs */
    /* the main thread's sample that ends last (its wait's end, a CPU
     * sample's time): where it was when the file ended (waits.h) */
    uint32_t where_tid;         /* whose last sample says where: the fatal mark's thread, else the main one */
    struct last_sample {
        uint64_t end, weight, map_ts;
        uint32_t stack;
        uint8_t kind, reason, set;
    } last, last_long;          /* last_long: its last wait of RSR_WHERE_LONG_NS or more */
};

static uint64_t map_time(const struct proc *p, uint64_t ts)
{
    uint32_t lo = 0, hi = p->nmod_ts;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (p->mod_ts[mid] <= ts)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? p->mod_ts[lo - 1] : 0;
}

static uint64_t agg_hash(uint32_t tid, uint32_t stack, uint64_t map_ts, uint8_t kind, uint8_t reason, uint32_t leaf)
{
    return rsr_hash_u64(((uint64_t)tid << 32 | stack) ^
                        rsr_hash_u64(map_ts + kind + ((uint64_t)reason << 8) + ((uint64_t)leaf << 16)));
}

static uint64_t agg_hash_of(const void *ctx, size_t i)
{
    const struct agg *a = &((const struct proc *)ctx)->aggs[i];
    return agg_hash(a->tid, a->stack, a->map_ts, a->kind, a->reason, a->leaf);
}

static void agg_add(struct proc *p, uint32_t tid, uint32_t stack, uint64_t map_ts, uint8_t kind,
                    uint8_t reason, uint32_t leaf, uint64_t w)
{
    struct rsr_probe at = rsr_table_probe(&p->agg_table, agg_hash(tid, stack, map_ts, kind, reason, leaf));
    for (long i; (i = rsr_table_next(&p->agg_table, &at)) >= 0;) {
        struct agg *a = &p->aggs[i];
        if (a->tid == tid && a->stack == stack && a->map_ts == map_ts && a->kind == kind &&
            a->reason == reason && a->leaf == leaf) {
            a->weight += w;
            a->count++;
            return;
        }
    }
    RSR_XGROW(p->aggs, p->capaggs, p->naggs + 1, 1024);
    p->aggs[p->naggs] = (struct agg){ tid, stack, map_ts, w, 1, kind, reason, leaf };
    if (rsr_table_put(&p->agg_table, &at, p->naggs, 1024, agg_hash_of, p) != 0)
        rsr_out_of_memory();
    p->naggs++;
}

static struct gpu_thread *gpu_thread(struct proc *p, uint32_t tid)
{
    for (uint32_t i = 0; i < p->ngth; i++)
        if (p->gth[i].tid == tid)
            return &p->gth[i];
    RSR_XGROW(p->gth, p->capgth, (size_t)p->ngth + 1, 64);
    p->gth[p->ngth] = (struct gpu_thread){ .tid = tid };
    return &p->gth[p->ngth++];
}

static void graphs_oom(void)
{
    fputs("ringside: out of memory\n", stderr);
    exit(1);
}

/* A name of the file's (string id) in gnames, + 1; 0: none. */
static uint32_t gname_of(void *arg, uint32_t sid)
{
    struct proc *p = arg;
    const char *s = sid && sid < p->nstrings ? p->strings[sid] : NULL;
    return s ? rsr_intern(&p->gnames, s) + 1 : 0;
}

/* A graph launch being shared among its nodes (graphs.h). */
struct graph_share {
    struct proc *p;
    const struct rsf_gpu_event *e;
};

static int graph_node_share(void *arg, const struct rsr_graph_node *n, int64_t start, int64_t end)
{
    struct graph_share *gs = arg;
    char b[48];
    uint32_t leaf = n->name;
    if (!leaf) {
        if (n->kind == RSF_GNODE_COLLECTIVE)
            snprintf(b, sizeof b, "nccl:%s", rsf_coll_op_name(n->op));
        else
            snprintf(b, sizeof b, "%s", n->kind == RSF_GNODE_MEMCPY ? "Memcpy" : n->kind == RSF_GNODE_MEMSET
                                                                                ? "Memset" : "kernel");
        leaf = rsr_intern(&gs->p->gnames, b) + 1;
    }
    if (end > start)
        agg_add(gs->p, gs->e->tid, n->stack, map_time(gs->p, gs->e->launch_ns), RSF_SAMPLE_GPU, 0, leaf,
                (uint64_t)(end - start));
    return 0;
}

/* The GPU time of a chunk's operations, by launching thread and class; a
 * graph launch whose nodes are known, by node (graph_node_share), as the
 * kernel table has it: the same split, fed the same times in the same
 * order (load_model.c). */
static void take_gpu_time(struct proc *p, const struct rsf_chunk *c)
{
    struct gpu_thread *g = NULL;
    if ((c->ngraph_nodes || c->ngraph_edges) && !p->graphs && !(p->graphs = rsr_graphs_new()))
        graphs_oom();
    if (p->graphs && (c->ngraph_nodes || c->ngraph_edges) && rsr_graphs_take(p->graphs, c, gname_of, p) != 0)
        graphs_oom();
    for (uint32_t i = 0; i < c->ngpu; i++) {
        const struct rsf_gpu_event *e = &c->gpu[i];
        if (!e->gpu_start_ns || e->gpu_end_ns < e->gpu_start_ns)
            continue;
        if (p->graphs && e->kind == RSF_GPU_KERNEL && rsr_graphs_seen(p->graphs, gname_of(p, e->name), e) != 0)
            graphs_oom();
        if (e->gpu_end_ns == e->gpu_start_ns)
            continue;
        if (!g || g->tid != e->tid)
            g = gpu_thread(p, e->tid);
        if (p->graphs && e->kind == RSF_GPU_GRAPH && e->graph) {
            struct graph_share gs = { p, e };
            int n = rsr_graphs_split(p->graphs, e->graph, (int64_t)e->gpu_start_ns, (int64_t)e->gpu_end_ns,
                                     graph_node_share, &gs);
            if (n < 0)
                graphs_oom();
            if (n > 0)
                continue;
        }
        uint64_t d = e->gpu_end_ns - e->gpu_start_ns;
        if (e->kind == RSF_GPU_KERNEL)
            g->kernel_ns += d;
        else
            g->other_ns[e->kind == RSF_GPU_GRAPH ? GPU_OTHER_GRAPH : GPU_OTHER_COPY] += d;
    }
}

/* The first span of p's window that ends after t (nwin: none). */
static size_t win_after(const struct proc *p, int64_t t)
{
    size_t lo = 0, hi = p->nwin;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (p->win[2 * mid + 1] <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* How much of [a, b) lies inside p's window, ns; for an instant (a == b),
 * 1 when it does, else 0. */
static uint64_t win_part(const struct proc *p, int64_t a, int64_t b)
{
    size_t i = win_after(p, a);
    if (a == b)
        return i < p->nwin && p->win[2 * i] <= a;
    uint64_t in = 0;
    for (; i < p->nwin && p->win[2 * i] < b; i++) {
        int64_t lo = a > p->win[2 * i] ? a : p->win[2 * i], hi = b < p->win[2 * i + 1] ? b : p->win[2 * i + 1];
        if (hi > lo)
            in += (uint64_t)(hi - lo);
    }
    return in;
}

static int take_chunk(const struct rsf_chunk *c, void *arg)
{
    struct proc *p = arg;
    if (c->meta) {
        p->rank = c->meta->rank;
        p->pid = (uint32_t)c->meta->pid;
        p->role = c->meta->role;
        if (p->opts->rank >= 0 && p->rank != p->opts->rank) {
            p->skip = 1;
            return 1;
        }
        p->real_off = (int64_t)c->meta->start.real_ns - (int64_t)c->meta->start.mono_ns;
        const char *every = rsf_meta_setting(c->meta, "gpu_stack_every");
        if (every)
            p->stack_every = (uint32_t)strtoul(every, NULL, 10);
    }
    if (c->nstrings) {
        uint32_t last = c->strings_base + c->nstrings;
        if (last > p->nstrings) {
            p->strings = rsr_xrealloc(p->strings, last * sizeof *p->strings);
            memset(p->strings + p->nstrings, 0, (last - p->nstrings) * sizeof *p->strings);
            p->nstrings = last;
        }
        for (uint32_t i = 0; i < c->nstrings; i++)
            if (!p->strings[c->strings_base + i])
                p->strings[c->strings_base + i] = rsr_xstrdup(c->strings[i]);
    }
    if (p->opts->kind < 0 || p->opts->kind == RSF_SAMPLE_GPU)
        take_gpu_time(p, c);
    for (uint32_t i = 0; i < c->nthreads; i++) {
        RSR_XGROW(p->threads, p->capthreads, (size_t)p->nthreads + 1, 64);
        p->threads[p->nthreads].tid = c->threads[i].tid;
        p->threads[p->nthreads++].name = c->threads[i].name;
    }
    for (uint32_t i = 0; i < c->nstacks; i++) {
        const struct rsf_stack *s = &c->stacks[i];
        RSR_XGROW(p->stacks, p->capstacks, (size_t)p->nstacks + 1, 64);
        struct stack_def *d = &p->stacks[p->nstacks++];
        d->id = s->id;
        d->nframes = s->nframes;
        d->frames = rsr_xmalloc((s->nframes ? s->nframes : 1) * sizeof *d->frames);
        for (uint32_t k = 0; k < s->nframes; k++)
            d->frames[k] = s->frames[k].addr;
    }
    for (uint32_t i = 0; i < c->nmodules; i++) {
        RSR_XGROW(p->mods, p->capmods, (size_t)p->nmods + 1, 64);
        p->mods[p->nmods] = (struct module_rec){ .m = c->modules[i], .order = p->nmods, .file = -2 };
        p->nmods++;
        /* keep mod_ts sorted (records come nearly in time order) */
        p->mod_ts = rsr_xrealloc(p->mod_ts, (p->nmod_ts + 1) * sizeof *p->mod_ts);
        uint32_t k = p->nmod_ts++;
        while (k && p->mod_ts[k - 1] > c->modules[i].ts_ns) {
            p->mod_ts[k] = p->mod_ts[k - 1];
            k--;
        }
        p->mod_ts[k] = c->modules[i].ts_ns;
    }
    for (uint32_t i = 0; i < c->nmarks; i++)
        if (c->marks[i].kind == RSF_MARK_FATAL && c->marks[i].tid != p->where_tid) {
            p->where_tid = c->marks[i].tid;     /* the thread that crashed */
            p->last.set = p->last_long.set = 0;
        }
    for (uint32_t i = 0; i < c->nsamples; i++) {
        const struct rsf_sample *s = &c->samples[i];
        /* a wait graph reads the CPU samples too: which threads worked
         * (helpers, above) */
        if (s->kind >= RSF_SAMPLE_NKINDS ||
            (p->opts->kind >= 0 && s->kind != p->opts->kind &&
             !(p->opts->kind == RSF_SAMPLE_WAIT && s->kind == RSF_SAMPLE_CPU && !p->opts->threads)))
            continue;
        /* the reason tells wait samples apart only; a value this reader
         * does not know stays a wait all the same, without a leaf */
        uint8_t reason = s->kind == RSF_SAMPLE_WAIT && s->reason < RSF_WAIT_NREASONS ? s->reason : 0;
        uint64_t weight = s->weight_ns;
        if (p->win) {
            /* a CPU or GPU sample is an instant; a wait lasts from ts for its weight */
            int64_t a = (int64_t)s->ts_ns + (p->has_clock_off ? p->clock_off : p->real_off);
            if (s->kind == RSF_SAMPLE_WAIT) {
                weight = win_part(p, a, a + (int64_t)s->weight_ns);
                if (!weight)
                    continue;
            } else if (!win_part(p, a, a)) {
                continue;
            }
        }
        agg_add(p, s->tid, s->stack, map_time(p, s->ts_ns), s->kind, reason, 0, weight);
        if (s->tid == (p->where_tid ? p->where_tid : p->pid) &&
            (s->kind == RSF_SAMPLE_CPU || s->kind == RSF_SAMPLE_WAIT)) {
            uint64_t end = s->ts_ns + (s->kind == RSF_SAMPLE_WAIT ? s->weight_ns : 0);
            struct last_sample x = { end, s->weight_ns, map_time(p, s->ts_ns), s->stack, s->kind, reason, 1 };
            if (!p->last.set || end >= p->last.end)
                p->last = x;
            if (s->kind == RSF_SAMPLE_WAIT && s->weight_ns >= RSR_WHERE_LONG_NS &&
                (!p->last_long.set || end >= p->last_long.end))
                p->last_long = x;
        }
        if (s->kind == RSF_SAMPLE_GPU)
            gpu_thread(p, s->tid)->sampled_ns += s->weight_ns;
    }
    /* held at the peak: a whole file's figure, not a window's */
    if (c->meta) {
        struct rsr_memlive sampling = { 0 };
        rsr_memlive_meta(&sampling, c);
        p->mem_always = sampling.always;
        p->mem_every = sampling.every;
    }
    if (c->nmems && !p->win && (p->opts->kind < 0 || p->opts->kind == RSF_SAMPLE_MEM)) {
        if (!p->mem) {
            p->mem = rsr_xcalloc(1, sizeof *p->mem);
            p->mem->always = p->mem_always;
            p->mem->every = p->mem_every;
        }
        for (uint32_t i = 0; i < c->nmems; i++)
            rsr_memlive_event(p->mem, &c->mems[i], c->mem_info ? &c->mem_info[i] : NULL);
    }
    return 0;
}

/* The file has been read: each allocating stack's device bytes at its
 * peak become the memory graph's samples, under the main thread. */
static void mem_samples(struct proc *p)
{
    if (!p->mem)
        return;
    rsr_memlive_end(p->mem);
    p->mem_grow_stack = rsr_memlive_growing(p->mem, &p->mem_grow_bytes, NULL);
    /* the sampled stacks' weights shared out to the peak's bytes: the graph
     * adds up to what the program held */
    double scale = p->mem->weight_at_peak ? (double)p->mem->peak / (double)p->mem->weight_at_peak : 0;
    for (size_t i = 0; i < p->mem->nstacks; i++) {
        const struct rsr_mem_stack *s = &p->mem->stacks[i];
        uint64_t w = (uint64_t)((double)s->at_peak * scale + 0.5);
        if (w)
            agg_add(p, p->pid, s->stack, map_time(p, (uint64_t)p->mem->peak_ns), RSF_SAMPLE_MEM, 0, 0, w);
    }
    rsr_memlive_free(p->mem);
    free(p->mem);
    p->mem = NULL;
}

static void proc_free(struct proc *p)
{
    for (uint32_t i = 0; i < p->nstrings; i++)
        free(p->strings[i]);
    free(p->strings);
    for (uint32_t i = 0; i < p->nstacks; i++)
        free(p->stacks[i].frames);
    free(p->stacks);
    free(p->mods);
    free(p->mod_ts);
    free(p->threads);
    free(p->aggs);
    rsr_table_free(&p->agg_table);
    free(p->mcache);
    rsr_table_free(&p->mcache_table);
    free(p->gth);
    rsr_graphs_free(p->graphs);
    rsr_intern_free(&p->gnames);
    if (p->mem)
        rsr_memlive_free(p->mem);
    free(p->mem);
}

static const char *str_of(const struct proc *p, uint32_t id)
{
    return id && id < p->nstrings ? p->strings[id] : NULL;
}

static int by_stack_id(const void *a, const void *b)
{
    const struct stack_def *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

static const struct stack_def *find_stack(const struct proc *p, uint32_t id)
{
    struct stack_def key = { .id = id };
    return bsearch(&key, p->stacks, p->nstacks, sizeof key, by_stack_id);
}

/* The module record in force for pc under map_ts: the latest (by time, then
 * file order) one with ts <= map_ts covering pc; else the earliest covering. */
static struct module_rec *scan_modules(struct proc *p, uint64_t pc, uint64_t map_ts)
{
    struct module_rec *best = NULL, *first = NULL;
    for (uint32_t i = 0; i < p->nmods; i++) {
        struct module_rec *m = &p->mods[i];
        if (pc < m->m.start || pc >= m->m.end)
            continue;
        if (m->m.ts_ns <= map_ts && (!best || m->m.ts_ns >= best->m.ts_ns))
            best = m;
        if (!first || m->m.ts_ns < first->m.ts_ns)
            first = m;
    }
    return best ? best : first;
}

static uint64_t mcache_hash(uint64_t pc, uint64_t map_ts)
{
    return rsr_hash_u64(pc ^ rsr_hash_u64(map_ts));
}

static uint64_t mcache_hash_of(const void *ctx, size_t i)
{
    const struct modcache *c = &((const struct proc *)ctx)->mcache[i];
    return mcache_hash(c->pc, c->map_ts);
}

/* scan_modules, cached: stacks share most of their addresses. */
static struct module_rec *find_module(struct proc *p, uint64_t pc, uint64_t map_ts)
{
    struct rsr_probe at = rsr_table_probe(&p->mcache_table, mcache_hash(pc, map_ts));
    for (long i; (i = rsr_table_next(&p->mcache_table, &at)) >= 0;)
        if (p->mcache[i].pc == pc && p->mcache[i].map_ts == map_ts)
            return p->mcache[i].m;
    struct module_rec *m = scan_modules(p, pc, map_ts);
    RSR_XGROW(p->mcache, p->capmcache, p->nmcache + 1, 1024);
    p->mcache[p->nmcache] = (struct modcache){ pc, map_ts, m };
    if (rsr_table_put(&p->mcache_table, &at, p->nmcache, 1024, mcache_hash_of, p) != 0)
        rsr_out_of_memory();
    p->nmcache++;
    return m;
}

static const char *basename_of(const char *path)
{
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

/* Per-load state: the symboliser and a cache of module lookups. */
struct loader {
    struct rsr_flame *fl;                       /* the one being filled */
    struct rsr_flame *const *fls;               /* per kind; NULL: not wanted */
    const struct rsr_flame_opts *opts;
    struct rsr_sym *sym;
    uint32_t *frames;
    uint32_t nframes, capframes;
    /* the stack's frames as rsr_wait_cause reads them (wait samples) */
    const char **names, **mods;
    uint8_t *is_python;
    uint32_t capnames;
    /* the fl->unnamed entries the stack being built touched */
    uint32_t *touched;
    uint32_t ntouched, captouched;
};

static void push(struct loader *L, uint32_t id)
{
    RSR_XGROW(L->frames, L->capframes, (size_t)L->nframes + 1, 64);
    L->frames[L->nframes++] = id;
}

/* Pushes the unnamed frame name of module path, counting it (a new
 * address, and the stack once) against path and why. */
static void push_unnamed(struct loader *L, const char *name, const char *module, const char *path,
                         const char *why)
{
    struct rsr_flame *fl = L->fl;
    uint32_t before = fl->names.n;
    push(L, rsr_flame_frame(fl, name, RSR_FRAME_UNKNOWN, module));
    struct rsr_flame_unnamed *u = rsr_flame_unnamed_of(fl, path, why);
    u->addresses += fl->names.n > before;
    uint32_t idx = (uint32_t)(u - fl->unnamed);
    for (uint32_t i = 0; i < L->ntouched; i++)
        if (L->touched[i] == idx)
            return;
    RSR_XGROW(L->touched, L->captouched, (size_t)L->ntouched + 1, 64);
    L->touched[L->ntouched++] = idx;
}

static void push_native(struct loader *L, struct proc *p, uint64_t pc, int exact, uint64_t map_ts)
{
    struct rsr_flame *fl = L->fl;
    char buf[1024];
    struct module_rec *m = find_module(p, pc, map_ts);
    if (!m) {
        push_unnamed(L, "[unknown]", "", "[unknown]", "no mapping holds the address");
        return;
    }
    const char *path = str_of(p, m->m.path);
    if (!path)
        path = "(unnamed)";
    const char *base = basename_of(path);
    if (m->file == -2) {
        const char *bid = str_of(p, m->m.build_id);
        /* Not the vDSO or other names without a file; a relative path is
         * tried from here (the build id check catches a different file). */
        m->file = strchr(path, '/') && path[0] != '[' ? rsr_sym_file(L->sym, path, bid) : -1;
        m->have_bias = m->file >= 0 &&
                       rsr_sym_bias(L->sym, m->file, m->m.start, m->m.file_off, &m->bias) == 0;
    }
    if (!m->have_bias) {
        /* nothing but the file offset is known */
        const char *why = m->file < 0 ? "no file (vDSO or anonymous memory)" : rsr_sym_file_why(L->sym, m->file);
        snprintf(buf, sizeof buf, "[%s+0x%" PRIx64 "]", base, pc - m->m.start + m->m.file_off);
        push_unnamed(L, buf, base, path, why ? why : "no segment of the file holds the mapping");
        return;
    }
    uint64_t addr = pc - m->bias;
    const struct rsr_sym_result *r = rsr_sym_lookup(L->sym, m->file, exact ? addr : addr - 1);
    if (!r->known) {
        snprintf(buf, sizeof buf, "[%s+0x%" PRIx64 "]", base, addr);
        push_unnamed(L, buf, base, path, r->why ? r->why : "no symbols");
        return;
    }
    for (uint32_t i = 0; i < r->nlevels; i++) {
        const struct rsr_sym_level *lv = &r->levels[i];
        const char *name = lv->func;
        if (L->opts->lines && lv->file) {
            snprintf(buf, sizeof buf, "%s (%s:%d)", lv->func, basename_of(lv->file), lv->line);
            name = buf;
        }
        push(L, rsr_flame_frame(fl, name, i ? RSR_FRAME_INLINE : RSR_FRAME_NATIVE, base));
    }
}

/* A Python frame's name as the agent wrote it, "pkg/mod.py:qualname:LINE"
 * (agents before lines wrote "mod.py:qualname", which is kept as it is):
 * the line goes unless lines are wanted. A qualname is never all digits,
 * so only a line can be the third part. */
static const char *python_name(const char *s, int lines, char *buf, size_t cap)
{
    const char *c = strrchr(s, ':');
    if (lines || !c || c == s || !c[1] || !memchr(s, ':', (size_t)(c - s)))
        return s;
    for (const char *d = c + 1; *d; d++)
        if (*d < '0' || *d > '9')
            return s;
    size_t n = (size_t)(c - s) < cap ? (size_t)(c - s) : cap - 1;
    memcpy(buf, s, n);
    buf[n] = 0;
    return buf;
}

static const char *thread_name(const struct proc *p, uint32_t tid, char *buf, size_t cap)
{
    const char *name = NULL;
    for (uint32_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid && str_of(p, p->threads[i].name))
            name = str_of(p, p->threads[i].name);
    if (name)
        snprintf(buf, cap, "[thread %s]", name);
    else
        snprintf(buf, cap, "[thread %u]", tid);
    return buf;
}

/* The thread tid's entry in all[0..*n), added when new. */
static struct rsr_thread_time *thread_time(struct rsr_thread_time **all, uint32_t *n, uint32_t *cap,
                                           const struct proc *p, uint32_t tid)
{
    for (uint32_t i = *n; i-- > 0;)
        if ((*all)[i].tid == tid)
            return &(*all)[i];
    RSR_XGROW(*all, *cap, (size_t)(*n) + 1, 64);
    struct rsr_thread_time *t = &(*all)[(*n)++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    for (uint32_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid && str_of(p, p->threads[i].name))
            snprintf(t->name, sizeof t->name, "%s", str_of(p, p->threads[i].name));
    return t;
}

/* The names of the frames in L->frames, with their modules and kinds, in
 * L->names, L->mods and L->is_python. */
static void frame_names(struct loader *L)
{
    const struct rsr_flame *fl = L->fl;
    if (L->nframes > L->capnames) {
        L->capnames = L->nframes * 2;
        L->names = rsr_xrealloc(L->names, L->capnames * sizeof *L->names);
        L->mods = rsr_xrealloc(L->mods, L->capnames * sizeof *L->mods);
        L->is_python = rsr_xrealloc(L->is_python, L->capnames);
    }
    for (uint32_t i = 0; i < L->nframes; i++) {
        uint32_t id = L->frames[i];
        L->names[i] = rsr_intern_str(&fl->names, id);
        L->is_python[i] = fl->name_class[id] == RSR_FRAME_PYTHON;
        L->mods[i] = rsr_intern_str(&fl->modules, fl->name_module[id]);
    }
}

/* The cause of the wait whose frames are in L->frames (waits.h). */
static int wait_cause(struct loader *L, unsigned reason)
{
    frame_names(L);
    return rsr_wait_cause(L->names, L->is_python, L->mods, L->nframes, reason);
}

/* A sampled launch stack's weight scaled to its thread's kernel time
 * (struct gpu_thread): kernel_ns / sampled_ns times its own. */
static uint64_t gpu_scaled(struct proc *p, uint32_t tid, uint64_t weight)
{
    const struct gpu_thread *g = gpu_thread(p, tid);
    if (!g->sampled_ns || !g->kernel_ns)
        return weight;
    return (uint64_t)((double)weight * (double)g->kernel_ns / (double)g->sampled_ns + 0.5);
}

/* The GPU time no launch stack stands for, as frames of their own under
 * the thread: copies and sets, CUDA graph launches, and the kernels of a
 * thread none of whose launches was sampled. Only in a process whose
 * launch stacks were recorded: without them there is no GPU flame graph. */
static void add_unstacked_gpu(struct loader *L, struct proc *p)
{
    static const char *const what[] = { "[copies and sets: no launch stack recorded]",
                                         "[CUDA graph launches: no launch stack recorded]" };
    for (uint32_t i = 0; i < p->ngth; i++) {
        const struct gpu_thread *g = &p->gth[i];
        for (int k = 0; k <= GPU_NOTHER; k++) {
            uint64_t ns = k < GPU_NOTHER ? g->other_ns[k] : g->sampled_ns ? 0 : g->kernel_ns;
            if (!ns)
                continue;
            L->nframes = 0;
            if (L->opts->threads) {
                char buf[300];
                push(L, rsr_flame_frame(L->fl, thread_name(p, g->tid, buf, sizeof buf), RSR_FRAME_THREAD, ""));
            }
            push(L, rsr_flame_frame(L->fl, k < GPU_NOTHER ? what[k] : "[kernels of a thread with no launch sampled]",
                                    RSR_FRAME_UNKNOWN, ""));
            rsr_flame_add(L->fl, L->frames, L->nframes, ns, 0);
        }
    }
}

/* Adds threads of one name that waited ns to fl's names set apart (the
 * heaviest RSR_FLAME_APART kept; the totals are the caller's). */
static void apart_add(struct rsr_flame *fl, const char *name, uint32_t threads, uint64_t ns)
{
    uint32_t i = 0;
    while (i < fl->napart && strcmp(fl->apart[i].name, name) != 0)
        i++;
    if (i == fl->napart) {
        if (fl->napart == RSR_FLAME_APART) {
            /* full: the lightest name gives way to a heavier one */
            i = 0;
            for (uint32_t k = 1; k < fl->napart; k++)
                if (fl->apart[k].ns < fl->apart[i].ns)
                    i = k;
            if (fl->apart[i].ns >= ns)
                return;
        } else {
            fl->napart++;
        }
        memset(&fl->apart[i], 0, sizeof fl->apart[i]);
        snprintf(fl->apart[i].name, sizeof fl->apart[i].name, "%s", name);
    }
    fl->apart[i].threads += threads;
    fl->apart[i].ns += ns;
}

/* Whether thread t (its file waits io) only waited, on the program's own. */
static int only_waited(const struct rsr_thread_time *t, uint64_t io)
{
    return t->wait_ns > 0 && (double)t->cpu_ns <= RSR_FLAME_APART_CPU * (double)t->wait_ns &&
           (double)io <= RSR_FLAME_APART_IO * (double)t->wait_ns;
}

/* The threads of p whose waits are set apart from the wait graph (flame.h):
 * their CPU and wait times in all[0..*n); returns whether any is. */
static int helpers(const struct loader *L, const struct proc *p, struct rsr_thread_time **all, uint32_t *n,
                   uint32_t *cap)
{
    if (L->opts->threads || !L->fls[RSF_SAMPLE_WAIT])
        return 0;
    /* per thread, beside all[] (the same order): file waits, and waits
     * for children or time (a supervisor's: a launcher's) */
    uint64_t *io = NULL, *sup = NULL;
    uint32_t nio = 0;
    for (size_t i = 0; i < p->naggs; i++) {
        const struct agg *a = &p->aggs[i];
        if (a->kind != RSF_SAMPLE_CPU && a->kind != RSF_SAMPLE_WAIT)
            continue;
        struct rsr_thread_time *t = thread_time(all, n, cap, p, a->tid);
        *(a->kind == RSF_SAMPLE_CPU ? &t->cpu_ns : &t->wait_ns) += a->weight;
        if (*n > nio) {
            io = rsr_xrealloc(io, *cap * sizeof *io);
            sup = rsr_xrealloc(sup, *cap * sizeof *sup);
            memset(io + nio, 0, (*n - nio) * sizeof *io);
            memset(sup + nio, 0, (*n - nio) * sizeof *sup);
            nio = *n;
        }
        if (a->kind == RSF_SAMPLE_WAIT && (a->reason == RSF_WAIT_FILE || a->reason == RSF_WAIT_FILE_LOCK))
            io[t - *all] += a->weight;
        if (a->kind == RSF_SAMPLE_WAIT && (a->reason == RSF_WAIT_CHILD || a->reason == RSF_WAIT_SLEEP))
            sup[t - *all] += a->weight;
    }
    int works = 0, all_idle = *n > 0, any = 0, supervises = 0;
    for (uint32_t i = 0; i < *n; i++) {
        const struct rsr_thread_time *t = &(*all)[i];
        works |= t->cpu_ns >= RSR_FLAME_WORK_NS;
        /* a process beside the ranks whose main thread waits for its
         * children or for time: a launcher, watching the job */
        if (t->tid == p->pid && p->role == RSF_ROLE_OTHER && t->wait_ns > 0)
            supervises = (double)sup[i] >= RSR_FLAME_SUPERVISES * (double)t->wait_ns;
        all_idle &= only_waited(t, io[i]);
    }
    for (uint32_t i = 0; i < *n; i++) {
        struct rsr_thread_time *t = &(*all)[i];
        int idle = only_waited(t, io[i]);
        int apart = (idle && works && t->tid != p->pid) || (all_idle && p->role == RSF_ROLE_CHILD) ||
                    (supervises && t->wait_ns > 0 && (t->tid == p->pid || idle));
        /* marked by a CPU time no thread has: is_helper */
        if (apart) {
            struct rsr_flame *fl = L->fls[RSF_SAMPLE_WAIT];
            fl->apart_threads++;
            fl->apart_ns += t->wait_ns;
            apart_add(fl, t->name, 1, t->wait_ns);
            t->cpu_ns = UINT64_MAX;
            any = 1;
        }
    }
    free(io);
    free(sup);
    return any;
}

static int is_helper(const struct rsr_thread_time *all, uint32_t n, uint32_t tid)
{
    for (uint32_t i = 0; i < n; i++)
        if (all[i].tid == tid)
            return all[i].cpu_ns == UINT64_MAX;
    return 0;
}

/* Whether a is the aggregate holding x, a sample of thread tid. */
static int is_sample(const struct agg *a, const struct last_sample *x, uint32_t tid)
{
    return x->set && a->tid == tid && a->stack == x->stack && a->kind == x->kind && a->reason == x->reason &&
           a->map_ts == x->map_ts && !a->leaf;
}

/* Adds p's samples to the trees, and when w is given, its off-CPU time
 * (waits.h) to *w. */
static void add_proc(struct loader *L, struct proc *p, uint64_t *nsamples, struct rsr_proc_waits *w)
{
    int seen[RSF_SAMPLE_NKINDS] = { 0 };
    struct rsr_thread_time *threads = NULL, *helper = NULL;
    uint32_t nthreads = 0, capthreads = 0, nhelper = 0, caphelper = 0;
    qsort(p->stacks, p->nstacks, sizeof *p->stacks, by_stack_id);
    int apart = helpers(L, p, &helper, &nhelper, &caphelper);
    for (size_t i = 0; i < p->naggs; i++) {
        struct agg *a = &p->aggs[i];
        if (!L->fls[a->kind])
            continue;
        /* a helper's waits: in the process's figures, not in the graph */
        int shown = !(apart && a->kind == RSF_SAMPLE_WAIT && is_helper(helper, nhelper, a->tid));
        L->fl = L->fls[a->kind];
        if (!seen[a->kind]++)
            L->fl->nprocs++;
        L->nframes = 0;
        L->ntouched = 0;
        if (L->opts->threads) {
            char buf[300];
            push(L, rsr_flame_frame(L->fl, thread_name(p, a->tid, buf, sizeof buf), RSR_FRAME_THREAD,
                                    ""));
        }
        const struct stack_def *s = find_stack(p, a->stack);
        if (!s || !s->nframes) {
            push(L, rsr_flame_frame(L->fl, "[no stack]", RSR_FRAME_UNKNOWN, ""));
        } else {
            /* The Python view (py-spy's): with Python frames, the native
             * ones outside the innermost of them are left out (the
             * interpreter's, and the program's start); below it, where the
             * time went (a C extension, an operator, a system call), stay. */
            uint32_t inner_py = UINT32_MAX;
            for (uint32_t k = 0; !L->opts->native && k < s->nframes && inner_py == UINT32_MAX; k++)
                if ((s->frames[k] & RSF_FRAME_PYTHON) && s->frames[k] != RSF_FRAME_TRUNCATED)
                    inner_py = k;
            for (uint32_t k = s->nframes; k-- > 0;) {
                uint64_t addr = s->frames[k];
                if (inner_py != UINT32_MAX && k > inner_py && !(addr & RSF_FRAME_PYTHON) && addr != RSF_FRAME_TRUNCATED)
                    continue;
                if (addr == RSF_FRAME_TRUNCATED) {
                    push(L, rsr_flame_frame(L->fl, "[truncated]", RSR_FRAME_UNKNOWN, ""));
                } else if (addr & RSF_FRAME_PYTHON) {
                    char buf[1024];
                    const char *name = str_of(p, (uint32_t)addr);
                    name = name ? python_name(name, L->opts->lines, buf, sizeof buf) : "[python ?]";
                    push(L, rsr_flame_frame(L->fl, name, RSR_FRAME_PYTHON, "python"));
                } else {
                    push_native(L, p, addr, k == 0, a->map_ts);
                }
            }
        }
        if (w && (a->kind == RSF_SAMPLE_WAIT || a->kind == RSF_SAMPLE_CPU)) {
            struct rsr_thread_time *t = thread_time(&threads, &nthreads, &capthreads, p, a->tid);
            int top, cause = -1;
            uint32_t wtid = p->where_tid ? p->where_tid : p->pid;  /* whose last samples say where */
            if (a->kind == RSF_SAMPLE_CPU) {
                w->cpu_ns += a->weight;
                t->cpu_ns += a->weight;
                frame_names(L);
                top = RSR_TOP_CPU;
            } else {
                w->count[a->reason] += a->count;
                w->ns[a->reason] += a->weight;
                t->wait_ns += a->weight;
                cause = wait_cause(L, a->reason);
                if (cause >= 0)
                    w->cause_ns[cause] += a->weight;
                if (a->tid == p->pid && cause == RSR_CAUSE_DATALOADER && rsr_host_class(a->reason) >= 0)
                    rsr_stack_set_add(&w->loader, a->stack, a->weight);
                if (a->tid == p->pid && cause == RSR_CAUSE_COLLECTIVE && rsr_host_class(a->reason) >= 0)
                    rsr_stack_set_add(&w->coll, a->stack, a->weight);
                top = cause == RSR_CAUSE_DATALOADER                                    ? RSR_TOP_DATA
                      : a->reason == RSF_WAIT_FILE || a->reason == RSF_WAIT_FILE_LOCK ? RSR_TOP_IO
                                                                                      : -1;
            }
            rsr_waits_top_offer(w, top, a->weight, L->names, L->nframes);
            uint32_t skip = L->opts->threads ? 1 : 0;   /* the thread's name */
            if (is_sample(a, &p->last, wtid))
                rsr_waits_where(w, L->names + skip, L->nframes - skip, a->reason, p->last.weight);
            if (is_sample(a, &p->last_long, wtid))
                rsr_waits_long_where(w, L->names + skip, L->nframes - skip, a->reason, p->last_long.weight, cause,
                                     (int64_t)p->last_long.end);
            int part = rsr_compile_part(L->names, L->is_python, L->nframes);
            if (part >= 0)
                w->compile_ns[part] += a->weight;
        }
        if (w && a->kind == RSF_SAMPLE_MEM) {
            frame_names(L);
            uint32_t skip = L->opts->threads ? 1 : 0;   /* the thread's name */
            /* named by the program's code: up to its innermost Python frame, when
             * it has one (below it: the framework's allocator, the same for all) */
            uint32_t n = L->nframes;
            while (n > skip + 1 && !L->is_python[n - 1] && memchr(L->is_python + skip, 1, n - skip))
                n--;
            rsr_waits_top_offer(w, RSR_TOP_MEM, a->weight, L->names + skip, n - skip);
            if (a->stack == p->mem_grow_stack)
                rsr_waits_top_offer(w, RSR_TOP_MEM_GROW, p->mem_grow_bytes, L->names + skip, n - skip);
        }
        if (a->leaf)
            push(L, rsr_flame_frame(L->fl, rsr_intern_str(&p->gnames, a->leaf - 1), RSR_FRAME_UNKNOWN, ""));
        if (a->reason != RSF_WAIT_NONE) {
            /* why the thread waited, as the leaf: "[wait: condvar]" (files
             * written before the reason was recorded have none) */
            char buf[64];
            snprintf(buf, sizeof buf, "[wait: %s]", rsf_wait_reason_label(a->reason));
            push(L, rsr_flame_frame(L->fl, buf, RSR_FRAME_UNKNOWN, ""));
        }
        if (!shown)
            continue;
        uint64_t weight = a->kind == RSF_SAMPLE_GPU && !a->leaf ? gpu_scaled(p, a->tid, a->weight) : a->weight;
        rsr_flame_add(L->fl, L->frames, L->nframes, weight, a->count);
        for (uint32_t t = 0; t < L->ntouched; t++) {
            L->fl->unnamed[L->touched[t]].samples += a->count;
            L->fl->unnamed[L->touched[t]].weight += weight;
        }
        nsamples[a->kind] += a->count;
    }
    if (seen[RSF_SAMPLE_GPU]) {
        L->fl = L->fls[RSF_SAMPLE_GPU];
        add_unstacked_gpu(L, p);
        if (p->stack_every && (!L->fl->stack_every_min || p->stack_every < L->fl->stack_every_min))
            L->fl->stack_every_min = p->stack_every;
        if (p->stack_every > L->fl->stack_every_max)
            L->fl->stack_every_max = p->stack_every;
    }
    if (w)
        rsr_waits_keep_threads(w, threads, nthreads);
    free(threads);
    free(helper);
}

/* Fills fls[kind] (where not NULL) from the files: the symboliser is shared
 * by the kinds, so each address is looked up once. opts->kind -1: all. */
/* Files are read and their samples added up in parallel; symbolisation,
 * which shares one symboliser, follows in file order. */
struct pool {
    struct proc *procs;         /* nsets per file: file i's are procs[i * nsets ...] */
    int nsets;
    struct rsr_walk *walks;
    char **files;
    int n;
    _Atomic int next;
};

/* One walk of a file for each of its sets' procs: stops when all of them
 * would. */
struct fan {
    struct proc *procs;
    int n;
};

static int take_fan(const struct rsf_chunk *c, void *arg)
{
    struct fan *f = arg;
    int stop = 1;
    for (int m = 0; m < f->n; m++)
        if (!f->procs[m].skip && take_chunk(c, &f->procs[m]) == 0)
            stop = 0;
    return stop;
}

static void *read_worker(void *arg)
{
    struct pool *pl = arg;
    int i;
    while ((i = atomic_fetch_add(&pl->next, 1)) < pl->n) {
        struct fan f = { &pl->procs[(size_t)i * pl->nsets], pl->nsets };
        int rc = pl->nsets == 1 ? rsr_walk_file(pl->files[i], take_chunk, f.procs, &pl->walks[i])
                                : rsr_walk_file(pl->files[i], take_fan, &f, &pl->walks[i]);
        if (rc != 0)
            for (int m = 0; m < pl->nsets; m++)
                f.procs[m].read_errno = errno ? errno : EIO;
    }
    return NULL;
}

/* Symbolises the samples of procs[0..n) into fls in order, and when waits
 * is given, each one's off-CPU time into waits[i]. */
/* Whether a stack of procs[0..n) holds a Python frame: without one, the
 * native view is the default one. */
static int any_python(struct proc *const *procs, int n)
{
    for (int i = 0; i < n; i++)
        for (uint32_t k = 0; k < procs[i]->nstacks; k++)
            for (uint32_t f = 0; f < procs[i]->stacks[k].nframes; f++)
                if ((procs[i]->stacks[k].frames[f] & RSF_FRAME_PYTHON) &&
                    procs[i]->stacks[k].frames[f] != RSF_FRAME_TRUNCATED)
                    return 1;
    return 0;
}

/* When native is given (RSF_SAMPLE_NKINDS trees, NULL where not wanted),
 * the same samples with every native frame go there as well (the
 * symboliser shared: each address is looked up once); when no stack has a
 * Python frame the views are one, and the default trees are merged there. */
static void add_procs(struct rsr_flame *const *fls, struct rsr_flame *const *native, struct proc *const *procs,
                      int n, const struct rsr_flame_opts *opts, uint64_t *nsamples, struct rsr_proc_waits *waits)
{
    struct rsr_flame_opts all = *opts;
    all.native = 1;
    struct loader L = { .fls = fls, .opts = opts };
    L.sym = opts->sym ? opts->sym : rsr_sym_new(opts->quiet);
    if (!L.sym) {
        fputs("ringside: out of memory\n", stderr);
        exit(1);
    }
    uint64_t more[RSF_SAMPLE_NKINDS] = { 0 };
    struct rsr_flame *const *same = NULL;
    if (native && !any_python(procs, n))
        same = native, native = NULL;
    for (int i = 0; i < n; i++)
        mem_samples(procs[i]);
    for (int view = 0; view < (native ? 2 : 1); view++) {
        if (view)
            L.fls = native, L.opts = &all;
        for (int i = 0; i < n; i++)
            if (!procs[i]->skip && !procs[i]->read_errno && procs[i]->naggs)
                add_proc(&L, procs[i], view ? more : nsamples, !view && waits ? &waits[i] : NULL);
    }
    /* the same trees: merged, not symbolised again (MPI's shares add up) */
    for (int k = 0; same && k < RSF_SAMPLE_NKINDS; k++)
        if (same[k] && fls[k])
            rsr_flame_merge(same[k], fls[k]);
    free(L.frames);
    free(L.names);
    free(L.mods);
    free(L.is_python);
    free(L.touched);
    if (!opts->sym)
        rsr_sym_free(L.sym);
}

/* The job's start: its earliest process's, real-time ns (0: none known). */
static int64_t job_start(char **files, int nfiles)
{
    int64_t start = 0;
    for (int i = 0; i < nfiles; i++) {
        int64_t s = rsr_file_start_real(files[i]);
        if (s && (!start || s < start))
            start = s;
    }
    return start;
}

/* Loads the samples of the files into nsets sets of trees at once (each
 * file read once): set m's kinds into fls[m * RSF_SAMPLE_NKINDS + kind]
 * (NULL: not wanted) with opts[m] (its window), its sample counts into
 * nsamples[m * RSF_SAMPLE_NKINDS + kind]; waits (set 0's) as add_procs. */
static void load_sets(struct rsr_flame *const *fls, int nsets, char **files, int nfiles,
                      const struct rsr_flame_opts *opts, uint64_t *nsamples,
                      struct rsr_proc_waits *waits)
{
    size_t np = (size_t)nfiles * (size_t)nsets;
    struct pool pl = { .files = files, .n = nfiles, .nsets = nsets };
    pl.procs = rsr_xcalloc(np + 1, sizeof *pl.procs);
    pl.walks = rsr_xcalloc((size_t)nfiles, sizeof *pl.walks);
    struct proc **order = rsr_xcalloc((size_t)nfiles + 1, sizeof *order);
    int64_t (*from_to)[2] = rsr_xcalloc((size_t)nsets, sizeof *from_to);
    for (int m = 0; m < nsets; m++) {
        const struct rsr_flame_opts *o = &opts[m];
        const int64_t *win = o->spans;
        size_t nwin = o->nspans;
        if (!win && (o->has_from || o->has_to)) {
            int64_t start = job_start(files, nfiles);
            from_to[m][0] = o->has_from ? start + (int64_t)(o->from_s * 1e9) : INT64_MIN;
            from_to[m][1] = o->has_to ? start + (int64_t)(o->to_s * 1e9) : INT64_MAX;
            win = from_to[m], nwin = 1;
        }
        for (int i = 0; i < nfiles; i++) {
            struct proc *p = &pl.procs[(size_t)i * nsets + m];
            *p = (struct proc){ .file = files[i], .opts = o, .rank = -1, .win = win, .nwin = nwin };
            if (o->spans && o->span_clock)
                p->has_clock_off = 1, p->clock_off = o->span_clock[i];
        }
    }
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = cpus > 1 ? (int)(cpus < 16 ? cpus : 16) : 1;
    if (nthreads > nfiles)
        nthreads = nfiles;
    pthread_t tids[16];
    int started = 0;
    for (int t = 1; t < nthreads; t++)
        if (pthread_create(&tids[started], NULL, read_worker, &pl) == 0)
            started++;
    read_worker(&pl);
    for (int t = 0; t < started; t++)
        pthread_join(tids[t], NULL);

    for (int i = 0; i < nfiles; i++) {
        struct proc *p = &pl.procs[(size_t)i * nsets];
        if (p->read_errno) {
            fprintf(stderr, "ringside: %s: %s\n", files[i], strerror(p->read_errno));
        } else if (!opts[0].quiet) {
            for (uint32_t k = 0; k < pl.walks[i].nproblems && k < RSR_MAX_PROBLEMS; k++)
                rsr_problem_print(stderr, files[i], &pl.walks[i].problems[k]);
        }
    }
    /* one symboliser for every set: each address is looked up once */
    struct rsr_sym *sym = opts[0].sym;
    if (!sym && nsets > 1 && !(sym = rsr_sym_new(opts[0].quiet))) {
        fputs("ringside: out of memory\n", stderr);
        exit(1);
    }
    for (int m = 0; m < nsets; m++) {
        struct rsr_flame_opts o = opts[m];
        o.sym = sym;
        for (int i = 0; i < nfiles; i++)
            order[i] = &pl.procs[(size_t)i * nsets + m];
        add_procs(fls + (size_t)m * RSF_SAMPLE_NKINDS, NULL, order, nfiles, &o,
                  nsamples + (size_t)m * RSF_SAMPLE_NKINDS, m == 0 ? waits : NULL);
    }
    if (sym != opts[0].sym)
        rsr_sym_free(sym);
    for (size_t i = 0; i < np; i++)
        proc_free(&pl.procs[i]);
    free(from_to);
    free(order);
    free(pl.procs);
    free(pl.walks);
}

static void load_kinds(struct rsr_flame *const *fls, char **files, int nfiles,
                       const struct rsr_flame_opts *opts, uint64_t *nsamples, struct rsr_proc_waits *waits)
{
    load_sets(fls, 1, files, nfiles, opts, nsamples, waits);
}

struct rsr_flame_feed {
    struct proc p;
    struct rsr_flame_opts opts;
};

struct rsr_flame_feed *rsr_flame_feed_new(int quiet, int lines)
{
    struct rsr_flame_feed *f = rsr_xcalloc(1, sizeof *f);
    f->opts = (struct rsr_flame_opts){ .kind = -1, .rank = -1, .quiet = quiet, .lines = lines };
    f->p = (struct proc){ .opts = &f->opts, .rank = -1 };
    return f;
}

int rsr_flame_feed_chunk(const struct rsf_chunk *c, void *feed)
{
    struct rsr_flame_feed *f = feed;
    f->p.opts = &f->opts;
    return take_chunk(c, &f->p);
}

void rsr_flame_feed_free(struct rsr_flame_feed *f)
{
    if (!f)
        return;
    proc_free(&f->p);
    free(f);
}

void rsr_flame_load_feeds(struct rsr_flame *fls, struct rsr_flame_feed *const *feeds, int n, int quiet, int lines,
                          struct rsr_proc_waits *waits)
{
    struct rsr_flame *each[RSR_FLAME_TREES];
    uint64_t nsamples[RSF_SAMPLE_NKINDS] = { 0 };
    struct rsr_flame_opts o = { .kind = -1, .rank = -1, .quiet = quiet, .lines = lines };
    struct proc **procs = rsr_xcalloc((size_t)n + 1, sizeof *procs);
    for (int k = 0; k < RSR_FLAME_TREES; k++) {
        rsr_flame_init(&fls[k], k % RSF_SAMPLE_NKINDS);
        each[k] = &fls[k];
    }
    for (int i = 0; i < n; i++)
        procs[i] = &feeds[i]->p;
    if (waits)
        memset(waits, 0, (size_t)n * sizeof *waits);
    add_procs(each, each + RSF_SAMPLE_NKINDS, procs, n, &o, nsamples, waits);
    free(procs);
}

uint64_t rsr_flame_load(struct rsr_flame *fl, char **files, int nfiles,
                        const struct rsr_flame_opts *opts)
{
    struct rsr_flame *fls[RSF_SAMPLE_NKINDS] = { NULL };
    uint64_t nsamples[RSF_SAMPLE_NKINDS] = { 0 };
    struct rsr_flame_opts o = *opts;
    if (fl->kind < 0 || fl->kind >= RSF_SAMPLE_NKINDS)
        return 0;
    fls[fl->kind] = fl;
    o.kind = fl->kind;
    load_kinds(fls, files, nfiles, &o, nsamples, NULL);
    return nsamples[fl->kind];
}

void rsr_flame_merge(struct rsr_flame *dst, const struct rsr_flame *src)
{
    uint32_t *names = rsr_xmalloc((src->names.n ? src->names.n : 1) * sizeof *names);
    uint32_t *nodes = rsr_xmalloc(src->nnodes * sizeof *nodes);
    for (uint32_t i = 0; i < src->names.n; i++)
        names[i] = rsr_flame_frame(dst, rsr_intern_str(&src->names, i), (enum rsr_frame_class)src->name_class[i],
                                   rsr_intern_str(&src->modules, src->name_module[i]));
    /* A node's parent comes before it (child_of appends), so each parent is
     * mapped by the time its children are. */
    nodes[0] = 0;
    for (uint32_t i = 0; i < src->nnodes; i++) {
        const struct rsr_flame_node *s = &src->nodes[i];
        uint32_t d = i ? child_of(dst, nodes[s->parent], names[s->name]) : 0;
        nodes[i] = d;
        dst->nodes[d].total += s->total;
        dst->nodes[d].self += s->self;
        dst->nodes[d].count += s->count;
    }
    dst->nprocs += src->nprocs;
    for (uint32_t i = 0; i < src->nunnamed; i++) {
        const struct rsr_flame_unnamed *s = &src->unnamed[i];
        struct rsr_flame_unnamed *d = rsr_flame_unnamed_of(dst, s->path, s->why);
        d->addresses += s->addresses;
        d->samples += s->samples;
        d->weight += s->weight;
    }
    for (uint32_t i = 0; i < src->napart; i++)
        apart_add(dst, src->apart[i].name, src->apart[i].threads, src->apart[i].ns);
    dst->apart_threads += src->apart_threads;
    dst->apart_ns += src->apart_ns;
    if (src->stack_every_min && (!dst->stack_every_min || src->stack_every_min < dst->stack_every_min))
        dst->stack_every_min = src->stack_every_min;
    if (src->stack_every_max > dst->stack_every_max)
        dst->stack_every_max = src->stack_every_max;
    free(names);
    free(nodes);
}

void rsr_flame_apart_line(FILE *f, const struct rsr_flame *fl, const char *end)
{
    if (!fl->apart_threads)
        return;
    fprintf(f, "set apart: %u thread%s that only waited (helpers, pools, pollers, idle workers), %.3g s",
            fl->apart_threads, fl->apart_threads == 1 ? "" : "s", (double)fl->apart_ns / 1e9);
    /* heaviest first */
    int used[RSR_FLAME_APART] = { 0 };
    for (uint32_t k = 0; k < fl->napart; k++) {
        uint32_t b = UINT32_MAX;
        for (uint32_t i = 0; i < fl->napart; i++)
            if (!used[i] && (b == UINT32_MAX || fl->apart[i].ns > fl->apart[b].ns))
                b = i;
        used[b] = 1;
        fprintf(f, "%s%s x %u (%.3g s)", k ? ", " : ": ", fl->apart[b].name[0] ? fl->apart[b].name : "unnamed",
                fl->apart[b].threads, (double)fl->apart[b].ns / 1e9);
    }
    fprintf(f, "; --threads shows every thread%s", end);
}

void rsr_flame_load_spans(struct rsr_flame *fls, int nsets, const int64_t *spans,
                          const int64_t *clock, char **files, int nfiles, int quiet, int lines)
{
    struct rsr_flame **each = rsr_xcalloc((size_t)nsets * RSF_SAMPLE_NKINDS, sizeof *each);
    uint64_t *nsamples = rsr_xcalloc((size_t)nsets * RSF_SAMPLE_NKINDS, sizeof *nsamples);
    struct rsr_flame_opts *o = rsr_xcalloc((size_t)nsets, sizeof *o);
    for (int m = 0; m < nsets; m++) {
        o[m] = (struct rsr_flame_opts){ .kind = -1, .rank = -1, .quiet = quiet, .lines = lines,
                                        .spans = spans + 2 * m, .nspans = 1, .span_clock = clock };
        for (int k = 0; k < RSF_SAMPLE_NKINDS; k++) {
            rsr_flame_init(&fls[m * RSF_SAMPLE_NKINDS + k], k);
            each[m * RSF_SAMPLE_NKINDS + k] = &fls[m * RSF_SAMPLE_NKINDS + k];
        }
    }
    load_sets(each, nsets, files, nfiles, o, nsamples, NULL);
    free(each);
    free(nsamples);
    free(o);
}

uint64_t rsr_flame_symbolize(char **files, int nfiles, struct rsr_sym *sym, int quiet)
{
    struct rsr_flame fls[RSF_SAMPLE_NKINDS], *each[RSF_SAMPLE_NKINDS];
    uint64_t nsamples[RSF_SAMPLE_NKINDS] = { 0 }, total = 0;
    struct rsr_flame_opts o = { .kind = -1, .rank = -1, .quiet = quiet, .sym = sym };
    for (int k = 0; k < RSF_SAMPLE_NKINDS; k++) {
        rsr_flame_init(&fls[k], k);
        each[k] = &fls[k];
    }
    load_kinds(each, files, nfiles, &o, nsamples, NULL);
    for (int k = 0; k < RSF_SAMPLE_NKINDS; k++) {
        total += nsamples[k];
        rsr_flame_free(&fls[k]);
    }
    return total;
}

void rsr_flame_by_reason(const struct rsr_flame *src, struct rsr_flame *dst)
{
    rsr_flame_init(dst, src->kind);
    uint64_t *below = rsr_xcalloc(src->nnodes, sizeof *below);  /* children's counts */
    for (uint32_t i = 1; i < src->nnodes; i++)
        below[src->nodes[i].parent] += src->nodes[i].count;
    uint32_t *frames = NULL, nframes = 0, cap = 0;
    for (uint32_t i = 1; i < src->nnodes; i++) {
        const struct rsr_flame_node *nd = &src->nodes[i];
        const char *leaf = rsr_intern_str(&src->names, nd->name);
        if (!nd->self || strncmp(leaf, "[wait: ", 7) != 0)
            continue;
        nframes = 0;
        RSR_XGROW(frames, cap, (size_t)nframes + 1, 64);
        frames[nframes++] = rsr_flame_frame(dst, leaf, RSR_FRAME_UNKNOWN, "");
        uint32_t first = nframes;
        for (uint32_t k = nd->parent; k; k = src->nodes[k].parent) {
            const uint32_t name = src->nodes[k].name;
            RSR_XGROW(frames, cap, (size_t)nframes + 1, 64);
            frames[nframes++] = rsr_flame_frame(dst, rsr_intern_str(&src->names, name),
                                                (enum rsr_frame_class)src->name_class[name],
                                                rsr_intern_str(&src->modules, src->name_module[name]));
        }
        for (uint32_t a = first, b = nframes - 1; a < b; a++, b--) {   /* root first */
            uint32_t t = frames[a];
            frames[a] = frames[b];
            frames[b] = t;
        }
        rsr_flame_add(dst, frames, nframes, nd->self, nd->count - below[i]);
    }
    dst->nprocs = src->nprocs;
    free(frames);
    free(below);
}
