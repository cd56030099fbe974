/* The writer's side of the sampler: sample records become the chunk's
 * Sample table, each distinct stack a Stack table defined once per file
 * (found again by hash), Python frames "pkg/mod.py:qualname:LINE" strings
 * (frame addr = bit 63 | string id; the reporter drops ":LINE" unless asked
 * for lines), and module changes Module records. */
#include "preload/sample.h"
#include "formats/chunk.h"

#include <stdlib.h>
#include <string.h>

#define SAMPLE_CAP 16384u

struct stack_slot {
    uint64_t hash;
    uint32_t id;          /* 0: empty */
    uint32_t n;
    size_t at;            /* frames in all_frames */
};

struct code_slot {
    uint64_t code;
    uint32_t str;             /* the name samples get */
    uint32_t pass;            /* the writer pass that last checked it */
    uint32_t used_pass;       /* the last pass a sample showed it in */
    uint32_t listed;          /* pass + 1 of the used list it is on */
    uint32_t next_str;        /* 0, or another object's name, from the next pass on */
    struct rs_py_ident id;    /* the code object str names */
    struct rs_py_ident next_id;
};

struct line_slot {
    uint64_t word;            /* code object | position (RS_PY_POS_SHIFT); 0: empty */
    uint32_t str;             /* its name with the line */
    struct rs_py_ident id;    /* the code object the line was found in */
};

static struct {
    /* per file */
    struct stack_slot *stacks;
    uint32_t stack_cap, nstack_ids;
    uint64_t *all_frames;
    size_t nall, all_cap;
    struct code_slot *codes;
    uint32_t code_cap, ncodes;
    uint32_t pass;            /* writer passes so far (rs_stackw_modules) */
    uint64_t *used;           /* code objects to check at the next pass's start */
    uint32_t nused, used_cap;
    struct line_slot *lines;
    uint32_t line_cap, nlines;
    struct rsf_module *mods_seen;
    uint32_t nseen, seen_cap;
    /* per chunk */
    struct rsf_sample *samples;
    uint32_t nsamples;
    uint32_t nopen;           /* of those, samples that make a file on their own (rs_stackw_pending) */
    uint32_t nopen_cpu;       /* of those, CPU samples */
    struct rsf_stack *cstacks;
    uint32_t ncstacks, cstack_cap;
    size_t *cstack_at;
    struct rsf_module *mods;
    uint32_t nmods, mods_cap;
} s;

static uint64_t hash_frames(const uint64_t *f, uint32_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ f[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* Python code objects' names are cached by address and checked once per
 * writer pass against the object then at that address: a function made at
 * run time can take a freed one's place. A pass that finds another code
 * object there keeps the old name for the samples it drains, taken before
 * it came by (an interpreter frees a script's functions as it ends, before
 * the last pass), and the new object's name holds from the next pass on. A
 * code object samples showed is checked again at the start of each of the
 * next RECHECK_PASSES passes, so that a change is found before the new
 * object's samples come in when passes fall between. An address that holds
 * no code object any more keeps its name. */
#define RECHECK_PASSES 8u

/* The slot of code, or the empty slot where it would go. */
static struct code_slot *code_slot(uint64_t code)
{
    uint32_t j = (uint32_t)(code >> 4) & (s.code_cap - 1);
    while (s.codes[j].code && s.codes[j].code != code)
        j = (j + 1) & (s.code_cap - 1);
    return &s.codes[j];
}

static int same_ident(const struct rs_py_ident *a, const struct rs_py_ident *b)
{
    return a->file == b->file && a->name == b->name && a->lines == b->lines;
}

/* The once-a-pass check of a cached name (above). */
static void code_check(struct code_slot *c, rs_intern_fn intern)
{
    if (c->pass == s.pass)
        return;
    c->pass = s.pass;
    if (c->next_str) {
        c->str = c->next_str;
        c->id = c->next_id;
        c->next_str = 0;
    }
    struct rs_py_ident now;
    char name[2048];
    if (rs_py_code_ident(c->code, &now) == 0 && !same_ident(&now, &c->id) &&
        rs_py_code_name(c->code, 0, name, sizeof name, &now) == 0) {
        c->next_str = intern(name);
        c->next_id = now;
    }
}

/* Puts c on the list of code objects to check at the next pass's start. */
static void code_list(struct code_slot *c)
{
    if (c->listed == s.pass + 1) /* pass + 1: 0 is "never" */
        return;
    c->listed = s.pass + 1;
    if (!rs_grow((void **)&s.used, &s.used_cap, s.nused + 1, sizeof *s.used))
        s.used[s.nused++] = c->code;
}

/* A new pass: the code objects samples showed in the last RECHECK_PASSES
 * passes are checked. */
static void code_pass(rs_intern_fn intern)
{
    s.pass++;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < s.nused; i++) {
        struct code_slot *c = code_slot(s.used[i]);
        if (!c->code)
            continue;
        code_check(c, intern);
        if (s.pass - c->used_pass < RECHECK_PASSES) {
            c->listed = s.pass + 1;
            s.used[kept++] = c->code;
        }
    }
    s.nused = kept;
}

/* String id of the code object at code ("pkg/mod.py:qualname"). */
static uint32_t code_string(uint64_t code, rs_intern_fn intern)
{
    if (s.ncodes + 1 >= s.code_cap / 2) {
        uint32_t cap = s.code_cap ? s.code_cap * 2 : 1024;
        struct code_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return 0;
        for (uint32_t i = 0; i < s.code_cap; i++) {
            if (!s.codes[i].code)
                continue;
            uint32_t j = (uint32_t)(s.codes[i].code >> 4) & (cap - 1);
            while (t[j].code)
                j = (j + 1) & (cap - 1);
            t[j] = s.codes[i];
        }
        free(s.codes);
        s.codes = t;
        s.code_cap = cap;
    }
    struct code_slot *c = code_slot(code);
    if (!c->code) {
        /* The name the sampler took when a sample first showed the object
         * holds for the samples drained now; the object there now, when
         * another, names those of the next pass on (as code_check does). */
        struct rs_py_ident id, was;
        char name[2048], then[2048];
        int now = rs_py_code_name(code, 0, name, sizeof name, &id) == 0;
        int kept = rs_py_stash_name(code, then, sizeof then, &was) == 0;
        if (!now && !kept)
            return intern("[python]");
        uint32_t str = intern(kept ? then : name);
        if (!str)
            return 0;
        s.ncodes++;
        *c = (struct code_slot){ .code = code, .str = str, .pass = s.pass, .id = kept ? was : id };
        if (kept && now && !same_ident(&id, &was)) {
            c->next_str = intern(name);
            c->next_id = id;
        }
    }
    code_check(c, intern);
    c->used_pass = s.pass;
    code_list(c);
    return c->str;
}

/* The slot of a Python frame word, or the empty slot where it would go. */
static struct line_slot *line_slot(uint64_t word)
{
    uint32_t j = (uint32_t)((word >> 4) * 0x9E3779B97F4A7C15ull >> 40) & (s.line_cap - 1);
    while (s.lines[j].word && s.lines[j].word != word)
        j = (j + 1) & (s.line_cap - 1);
    return &s.lines[j];
}

/* String id of a Python frame word: its code object's name with the line
 * of its position ("pkg/mod.py:qualname:LINE"), found once per word and
 * kept while the code object at that address is the one the cached name
 * belongs to; the name alone when the line is not known. */
static uint32_t frame_string(uint64_t word, rs_intern_fn intern)
{
    uint64_t code = word & RS_PY_CODE_MASK;
    unsigned pos = (unsigned)(word >> RS_PY_POS_SHIFT) & RS_PY_POS_MAX;
    uint32_t name = code_string(code, intern);
    if (!pos || !name || !code_slot(code)->code) /* no table, or a code object not read */
        return name;
    if (s.nlines + 1 >= s.line_cap / 2) {
        uint32_t cap = s.line_cap ? s.line_cap * 2 : 1024;
        struct line_slot *t = calloc(cap, sizeof *t), *old = s.lines;
        if (!t)
            return name;
        uint32_t oldcap = s.line_cap;
        s.lines = t;
        s.line_cap = cap;
        for (uint32_t i = 0; i < oldcap; i++)
            if (old[i].word)
                *line_slot(old[i].word) = old[i];
        free(old);
    }
    const struct code_slot *c = code_slot(code);
    struct line_slot *l = line_slot(word);
    if (l->word && same_ident(&l->id, &c->id))
        return l->str;
    struct rs_py_ident now;
    char text[2048];
    uint32_t str = name;
    /* Another object at the address since the name was taken: its line
     * table says nothing of the samples the old name is kept for. */
    if (rs_py_code_name(code, pos, text, sizeof text, &now) == 0 && same_ident(&now, &c->id))
        str = intern(text);
    if (!str)
        return name;
    if (!l->word)
        s.nlines++;
    *l = (struct line_slot){ word, str, c->id };
    return str;
}

/* The file's id of stack f[0..n), defining it in this chunk if new. */
static uint32_t stack_id(const uint64_t *f, uint32_t n)
{
    if (s.nstack_ids + 1 >= s.stack_cap / 2) {
        uint32_t cap = s.stack_cap ? s.stack_cap * 2 : 1024;
        struct stack_slot *t = calloc(cap, sizeof *t);
        if (!t)
            return 0;
        for (uint32_t i = 0; i < s.stack_cap; i++) {
            if (!s.stacks[i].id)
                continue;
            uint32_t j = (uint32_t)s.stacks[i].hash & (cap - 1);
            while (t[j].id)
                j = (j + 1) & (cap - 1);
            t[j] = s.stacks[i];
        }
        free(s.stacks);
        s.stacks = t;
        s.stack_cap = cap;
    }
    uint64_t h = hash_frames(f, n);
    uint32_t j = (uint32_t)h & (s.stack_cap - 1);
    for (; s.stacks[j].id; j = (j + 1) & (s.stack_cap - 1)) {
        struct stack_slot *e = &s.stacks[j];
        if (e->hash == h && e->n == n && memcmp(s.all_frames + e->at, f, n * sizeof *f) == 0)
            return e->id;
    }
    if (s.nall + n > s.all_cap) {
        size_t cap = s.all_cap ? s.all_cap * 2 : 65536;
        while (cap < s.nall + n)
            cap *= 2;
        uint64_t *p = realloc(s.all_frames, cap * sizeof *p);
        if (!p)
            return 0;
        s.all_frames = p;
        s.all_cap = cap;
    }
    if (rs_grow((void **)&s.cstacks, &s.cstack_cap, s.ncstacks + 1, sizeof *s.cstacks))
        return 0;
    uint32_t cap_at = s.cstack_cap;
    size_t *at = realloc(s.cstack_at, cap_at * sizeof *at);
    if (!at)
        return 0;
    s.cstack_at = at;
    memcpy(s.all_frames + s.nall, f, n * sizeof *f);
    uint32_t id = ++s.nstack_ids;
    s.stacks[j] = (struct stack_slot){ h, id, n, s.nall };
    s.cstacks[s.ncstacks] = (struct rsf_stack){ id, NULL, n };
    s.cstack_at[s.ncstacks++] = s.nall;
    s.nall += n;
    return id;
}

int rs_stackw_full(void)
{
    return s.nsamples >= SAMPLE_CAP;
}

/* The agent's own frames out of a stack of n (frames after the first are
 * return addresses): a sample taken inside a hook has the hook and what it
 * called (timed_call, io_finish...) where the program called a function;
 * those become that function's entry as the leaf (the program's pwrite
 * reads "pwrite", as it would without the agent). Agent frames further out
 * (the wrapper that starts the program's threads) are left out. Returns
 * the new count. */
static uint32_t drop_agent_frames(uint64_t *f, uint32_t n)
{
    uint32_t k = 0, out = 0;
    while (k < n && !(f[k] & RS_PYFRAME_BIT) && rs_unwind_is_agent(f[k] - (k > 0)))
        k++;
    if (k) {
        uint64_t entry = rs_unwind_hook_entry(f[k - 1] - (k > 1));
        if (entry)
            f[out++] = entry;
    }
    for (uint32_t i = k; i < n; i++)
        if ((f[i] & RS_PYFRAME_BIT) || !rs_unwind_is_agent(f[i] - (i > 0)))
            f[out++] = f[i];
    return out;
}

/* Frames of a sample record, the agent's own left out, Python code
 * objects turned into strings. */
static uint32_t record_stack(const struct rs_rec_hdr *h, rs_intern_fn intern)
{
    const struct rs_rec_sample *r = (const void *)h;
    uint32_t n = h->file & RS_SAMPLE_NFRAMES_MASK;
    if (n > RS_STACK_MAX)
        n = RS_STACK_MAX;
    uint64_t f[RS_STACK_MAX];
    memcpy(f, r->frames, n * sizeof *f);
    n = drop_agent_frames(f, n);
    for (uint32_t i = 0; i < n; i++)
        if (f[i] & RS_PYFRAME_BIT)
            f[i] = RS_PYFRAME_BIT | frame_string(f[i] & ~RS_PYFRAME_BIT, intern);
    return stack_id(f, n);
}

uint32_t rs_stackw_gpu_stack(const struct rs_rec_hdr *h, rs_intern_fn intern)
{
    return record_stack(h, intern);
}

void rs_stackw_gpu_sample(uint64_t ts, uint64_t weight, uint32_t tid, uint32_t stack)
{
    if (!s.samples && !(s.samples = malloc(SAMPLE_CAP * sizeof *s.samples)))
        return;
    if (s.nsamples >= SAMPLE_CAP)
        return;
    s.samples[s.nsamples++] = (struct rsf_sample){
        .ts_ns = ts, .weight_ns = weight, .tid = tid, .stack = stack, .kind = RSF_SAMPLE_GPU };
    s.nopen++;
}

/* Whether a CPU sample was taken inside a wait for children: the C
 * library's frames of the real call, then the agent's hook of it (the
 * kernel charges the waiter for reaping a child; the timer's signal comes
 * as the call returns). Frames after the first are return addresses. */
static int in_child_wait(const struct rs_rec_sample *r)
{
    uint32_t n = r->h.file & RS_SAMPLE_NFRAMES_MASK;
    for (uint32_t i = 0; i < n && i < 4; i++) {
        uint64_t pc = r->frames[i];
        if (pc & RS_PYFRAME_BIT)
            return 0;
        pc -= i > 0;
        if (rs_unwind_is_agent(pc))
            return rs_child_wait_pc(pc);
    }
    return 0;
}

/* Whether a sample is reason enough for the process to have a trace file.
 * A process whose work is waiting (threads on locks, condition variables,
 * semaphores, joins, barriers, futexes) is kept. A launcher is told apart
 * by what it waits for: its children, their pipes and sockets, and time
 * (waitpid, poll, reads of pipes and sockets, sleeps): such a process
 * leaves no file for those waits alone, as torchrun's agent, srun,
 * simlaunch and a shell don't, even where it is a rank (a launcher run as
 * an srun task); with a file, they are written with the rest. */
int rs_wait_opens_file(int reason)
{
    switch (reason) {
    case RSF_WAIT_CHILD:
    case RSF_WAIT_PIPE:
    case RSF_WAIT_SOCKET:
    case RSF_WAIT_POLL:
    case RSF_WAIT_SLEEP:
        return 0;
    default:
        return 1;
    }
}

static int opens_file(const struct rsf_sample *x, const struct rs_rec_sample *r)
{
    if (x->kind == RSF_SAMPLE_CPU)
        return !in_child_wait(r);
    if (x->kind != RSF_SAMPLE_WAIT)
        return 1;
    return rs_wait_opens_file(x->reason);
}

int rs_stackw_take(const struct rs_rec_hdr *h, uint32_t tid, const struct rs_tick_map *map,
                   rs_intern_fn intern)
{
    if (h->kind != RS_REC_SAMPLE)
        return rs_stackw_full();
    if (!s.samples && !(s.samples = malloc(SAMPLE_CAP * sizeof *s.samples)))
        return 0;
    if (s.nsamples >= SAMPLE_CAP)
        return 1;
    const struct rs_rec_sample *r = (const void *)h;
    uint32_t id = record_stack(h, intern);
    if (!id)
        return rs_stackw_full();
    int ns = (h->op & RS_SAMPLE_NS) != 0;
    uint8_t kind = h->op & (uint8_t)~RS_SAMPLE_NS;
    s.samples[s.nsamples++] = (struct rsf_sample){
        .ts_ns = ns ? r->ts : rs_tick_ns(map, r->ts),
        .weight_ns = ns || kind == RSF_SAMPLE_CPU ? r->weight : rs_tick_dur(map, r->weight),
        .tid = tid, .stack = id, .kind = kind,
        .reason = (uint8_t)(h->file >> RS_SAMPLE_REASON_SHIFT),
    };
    uint32_t opens = (uint32_t)opens_file(&s.samples[s.nsamples - 1], r);
    s.nopen += opens;
    s.nopen_cpu += kind == RSF_SAMPLE_CPU ? opens : 0;
    return rs_stackw_full();
}

struct mod_arg {
    rs_intern_fn intern;
    uint64_t ts;
};

static void one_module(uint64_t start, uint64_t end, uint64_t file_off, const char *path,
                       const char *build_id, void *varg)
{
    struct mod_arg *a = varg;
    uint32_t p = a->intern(path);
    for (uint32_t i = 0; i < s.nseen; i++) {
        const struct rsf_module *m = &s.mods_seen[i];
        if (m->start == start && m->end == end && m->file_off == file_off && m->path == p)
            return;
    }
    struct rsf_module m = { a->ts, start, end, file_off, p, build_id[0] ? a->intern(build_id) : 0 };
    if (rs_grow((void **)&s.mods_seen, &s.seen_cap, s.nseen + 1, sizeof m) ||
        rs_grow((void **)&s.mods, &s.mods_cap, s.nmods + 1, sizeof m))
        return;
    s.mods_seen[s.nseen++] = m;
    s.mods[s.nmods++] = m;
}

void rs_stackw_modules(rs_intern_fn intern)
{
    code_pass(intern);
    if (!rs_sample_sig && rs_hot.wait_ticks == UINT64_MAX)
        return;
    struct mod_arg a = { intern, rs_now() };
    rs_modules_poll(one_module, &a);
}

int rs_stackw_pending(void)
{
    return s.nopen > 0;
}

int rs_stackw_pending_but_cpu(void)
{
    return s.nopen > s.nopen_cpu;
}

void rs_stackw_drop_waits(void)
{
    if (!s.nopen)
        s.nsamples = 0;
}

int rs_stackw_any(void)
{
    return s.nsamples || s.ncstacks || s.nmods;
}

void rs_stackw_fill(struct rsf_chunk *c)
{
    for (uint32_t i = 0; i < s.ncstacks; i++)
        s.cstacks[i].frames = (const struct rsf_frame *)(s.all_frames + s.cstack_at[i]);
    c->stacks = s.cstacks;
    c->nstacks = s.ncstacks;
    c->samples = s.samples;
    c->nsamples = s.nsamples;
    c->modules = s.mods;
    c->nmodules = s.nmods;
}

void rs_stackw_chunk_done(void)
{
    s.nsamples = s.ncstacks = s.nmods = s.nopen = s.nopen_cpu = 0;
}

void rs_stackw_new_file(void)
{
    /* Ids and strings start over with the file; the loader's map is
     * recorded again. Old tables are dropped, not freed: the parent may have
     * been changing them when it forked. */
    memset(&s, 0, sizeof s);
    rs_modules_reset();
}
