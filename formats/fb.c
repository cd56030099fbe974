/* FlatBuffers subset: builder and verifier (see fb.h). The builder writes
 * front to back: vtable, table, then the objects the table refers to, so
 * every uoffset points forward as the format requires; alignment is kept
 * relative to the start of the size-prefixed buffer, as flatc checks it. */
#include "formats/fb.h"
#include "formats/rsf_error.h"

#include <string.h>

#define RSF_FB_MAX_DEPTH 8

static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline void wr32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void wr16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }

/* Inline size and alignment of a field inside its table. */
static void inline_layout(const struct rsf_field_desc *f, unsigned *size, unsigned *align)
{
    switch (f->kind) {
    case RSF_F_BOOL: case RSF_F_U8: *size = *align = 1; break;
    case RSF_F_U32: case RSF_F_I32: *size = *align = 4; break;
    case RSF_F_U64: case RSF_F_I64: *size = *align = 8; break;
    case RSF_F_STRUCT: *size = f->size; *align = f->align; break;
    default: *size = *align = 4; break; /* a uoffset */
    }
}

static int is_ref(const struct rsf_field_desc *f)
{
    return f->kind >= RSF_F_STRING && f->kind != RSF_F_STRUCT;
}

/* ---- builder ---- */

static size_t table_bound(const struct rsf_table_desc *d, const struct rsf_val *v, int depth);

static size_t val_bound(const struct rsf_field_desc *f, const struct rsf_val *v, int depth)
{
    size_t n = 0;
    switch (f->kind) {
    case RSF_F_STRING:
        return 8 + v->n + 1;
    case RSF_F_VEC_STRUCT:
        return 16 + (size_t)v->n * f->size;
    case RSF_F_VEC_STRING: {
        const char *const *s = v->p;
        n = 8 + 4 * (size_t)v->n;
        for (uint32_t i = 0; i < v->n; i++)
            n += 8 + strlen(s[i]) + 1;
        return n;
    }
    case RSF_F_TABLE:
        return table_bound(f->table, v->p, depth + 1);
    case RSF_F_VEC_TABLE: {
        const struct rsf_val *const *t = v->p;
        n = 8 + 4 * (size_t)v->n;
        for (uint32_t i = 0; i < v->n; i++)
            n += table_bound(f->table, t[i], depth + 1);
        return n;
    }
    default:
        return 0;
    }
}

static size_t table_bound(const struct rsf_table_desc *d, const struct rsf_val *v, int depth)
{
    size_t n = 8 + 4 + 2 * (size_t)d->nfields + 8 + 8; /* vtable, padding, soffset */
    if (depth > RSF_FB_MAX_DEPTH)
        return n;
    for (unsigned i = 0; i < d->nfields; i++) {
        if (!v[i].set)
            continue;
        unsigned size, align;
        inline_layout(&d->fields[i], &size, &align);
        n += size + align;
        if (is_ref(&d->fields[i]))
            n += val_bound(&d->fields[i], &v[i], depth);
    }
    return n;
}

size_t rsf_fb_bound(const struct rsf_table_desc *desc, const struct rsf_val *vals)
{
    return 12 + table_bound(desc, vals, 0);
}

/* Pads with zeros until (len + skew) is a multiple of align. */
static int pad_to(struct rsf_buf *b, size_t align, size_t skew)
{
    while ((b->len + skew) % align) {
        if (b->len >= b->cap)
            return RSF_ERR_SPACE;
        b->p[b->len++] = 0;
    }
    return RSF_ERR_OK;
}

static int put(struct rsf_buf *b, const void *src, size_t n)
{
    if (b->cap - b->len < n)
        return RSF_ERR_SPACE;
    if (n)
        memcpy(b->p + b->len, src, n);
    b->len += n;
    return RSF_ERR_OK;
}

static int put_u32(struct rsf_buf *b, uint32_t v) { return put(b, &v, 4); }

static int write_string(struct rsf_buf *b, const char *s, uint32_t n, size_t *pos)
{
    int err = pad_to(b, 4, 0);
    if (err)
        return err;
    *pos = b->len;
    if ((err = put_u32(b, n)) || (err = put(b, s, n)))
        return err;
    return put(b, "", 1);
}

static int write_table(struct rsf_buf *b, const struct rsf_table_desc *d,
                       const struct rsf_val *v, size_t *tpos);

/* Writes the object a reference field points to; its position in *pos. */
static int write_ref(struct rsf_buf *b, const struct rsf_field_desc *f,
                     const struct rsf_val *v, size_t *pos)
{
    int err;
    switch (f->kind) {
    case RSF_F_STRING:
        return write_string(b, v->p, v->n, pos);
    case RSF_F_VEC_STRUCT:
        /* The length sits just before the elements, which need their own
         * alignment. */
        if ((err = pad_to(b, f->align > 4 ? f->align : 4, 4)))
            return err;
        *pos = b->len;
        if ((err = put_u32(b, v->n)))
            return err;
        return put(b, v->p, (size_t)v->n * f->size);
    case RSF_F_TABLE:
        return write_table(b, f->table, v->p, pos);
    case RSF_F_VEC_STRING:
    case RSF_F_VEC_TABLE: {
        if ((err = pad_to(b, 4, 0)))
            return err;
        *pos = b->len;
        if ((err = put_u32(b, v->n)))
            return err;
        size_t slots = b->len;
        for (uint32_t i = 0; i < v->n; i++)
            if ((err = put_u32(b, 0)))
                return err;
        for (uint32_t i = 0; i < v->n; i++) {
            size_t at;
            if (f->kind == RSF_F_VEC_STRING) {
                const char *s = ((const char *const *)v->p)[i];
                err = write_string(b, s, (uint32_t)strlen(s), &at);
            } else {
                err = write_table(b, f->table, ((const struct rsf_val *const *)v->p)[i], &at);
            }
            if (err)
                return err;
            size_t slot = slots + 4 * (size_t)i;
            wr32(b->p + slot, (uint32_t)(at - slot));
        }
        return RSF_ERR_OK;
    }
    default:
        return RSF_ERR_BAD_VALUE;
    }
}

static int write_table(struct rsf_buf *b, const struct rsf_table_desc *d,
                       const struct rsf_val *v, size_t *tpos)
{
    unsigned nslots = 0;
    uint16_t offs[64] = {0};
    if (d->nfields > 64)
        return RSF_ERR_BAD_VALUE;
    for (unsigned i = 0; i < d->nfields; i++)
        if (v[i].set)
            nslots = i + 1;

    /* Lay fields out by falling alignment after the 4-byte soffset; the
     * table starts at 4 mod 8 so that offset 4 is 8-aligned. */
    unsigned end = 4;
    for (unsigned align = 8; align >= 1; align /= 2)
        for (unsigned i = 0; i < nslots; i++) {
            unsigned size, a;
            if (!v[i].set)
                continue;
            inline_layout(&d->fields[i], &size, &a);
            if (a != align)
                continue;
            end = (end + 4 + a - 1) / a * a - 4; /* aligned in the buffer */
            offs[i] = (uint16_t)end;
            end += size;
        }

    int err = pad_to(b, 2, 0);
    if (err)
        return err;
    size_t vt = b->len;
    uint16_t vtsize = (uint16_t)(4 + 2 * nslots);
    if (b->cap - b->len < vtsize)
        return RSF_ERR_SPACE;
    wr16(b->p + vt, vtsize);
    wr16(b->p + vt + 2, (uint16_t)end);
    for (unsigned i = 0; i < nslots; i++)
        wr16(b->p + vt + 4 + 2 * i, offs[i]);
    b->len += vtsize;

    if ((err = pad_to(b, 8, 4)))
        return err;
    size_t t = b->len;
    if (b->cap - b->len < end)
        return RSF_ERR_SPACE;
    memset(b->p + t, 0, end);
    wr32(b->p + t, (uint32_t)(int32_t)(t - vt));
    for (unsigned i = 0; i < nslots; i++) {
        if (!v[i].set)
            continue;
        const struct rsf_field_desc *f = &d->fields[i];
        unsigned size, a;
        inline_layout(f, &size, &a);
        if (f->kind == RSF_F_STRUCT)
            memcpy(b->p + t + offs[i], v[i].p, size);
        else if (!is_ref(f))
            memcpy(b->p + t + offs[i], &v[i].u, size); /* little-endian: low bytes */
    }
    b->len += end;

    for (unsigned i = 0; i < nslots; i++) {
        if (!v[i].set || !is_ref(&d->fields[i]))
            continue;
        size_t at;
        if ((err = write_ref(b, &d->fields[i], &v[i], &at)))
            return err;
        size_t field = t + offs[i];
        wr32(b->p + field, (uint32_t)(at - field));
    }
    *tpos = t;
    return RSF_ERR_OK;
}

int rsf_fb_finish(struct rsf_buf *out, const struct rsf_table_desc *root,
                  const struct rsf_val *vals, const char *ident)
{
    out->len = 0;
    if (out->cap < 12)
        return RSF_ERR_SPACE;
    memset(out->p, 0, 8);
    memcpy(out->p + 8, ident, 4);
    out->len = 12;
    size_t t;
    int err = write_table(out, root, vals, &t);
    if (err)
        return err;
    wr32(out->p + 4, (uint32_t)(t - 4));
    wr32(out->p, (uint32_t)(out->len - 4));
    return RSF_ERR_OK;
}

/* ---- verifier ---- */

struct vctx {
    const uint8_t *buf;
    size_t size;
    size_t where;
};

static int fail(struct vctx *c, size_t at, int err)
{
    c->where = at;
    return err;
}

/* Follows the uoffset stored at pos; the target must lie in the buffer. */
static int follow(struct vctx *c, size_t pos, size_t *target)
{
    if (pos + 4 > c->size || pos % 4)
        return fail(c, pos, pos % 4 ? RSF_ERR_BAD_ALIGN : RSF_ERR_BAD_OFFSET);
    uint32_t o = rd32(c->buf + pos);
    if (o == 0 || o > 0x7fffffffu || o >= c->size - pos)
        return fail(c, pos, RSF_ERR_BAD_OFFSET);
    *target = pos + o;
    return RSF_ERR_OK;
}

/* Checks a vector header at vpos with elements of esize bytes aligned to
 * ealign; its count in *n. */
static int check_vec(struct vctx *c, size_t vpos, size_t esize, size_t ealign, uint32_t *n)
{
    if (vpos % 4 || (vpos + 4) % ealign)
        return fail(c, vpos, RSF_ERR_BAD_ALIGN);
    if (vpos + 4 > c->size)
        return fail(c, vpos, RSF_ERR_BAD_OFFSET);
    *n = rd32(c->buf + vpos);
    if (esize && *n > (c->size - vpos - 4) / esize)
        return fail(c, vpos, RSF_ERR_BAD_OFFSET);
    return RSF_ERR_OK;
}

static int check_string(struct vctx *c, size_t spos)
{
    uint32_t n;
    int err = check_vec(c, spos, 1, 1, &n);
    if (err)
        return err;
    if (spos + 4 + (size_t)n >= c->size)
        return fail(c, spos, RSF_ERR_BAD_OFFSET);
    if (c->buf[spos + 4 + n] != 0)
        return fail(c, spos, RSF_ERR_BAD_STRING);
    return RSF_ERR_OK;
}

static int check_table(struct vctx *c, size_t tpos, const struct rsf_table_desc *d, int depth);

static int check_ref(struct vctx *c, size_t target, const struct rsf_field_desc *f, int depth)
{
    uint32_t n;
    int err;
    switch (f->kind) {
    case RSF_F_STRING:
        return check_string(c, target);
    case RSF_F_VEC_STRUCT:
        return check_vec(c, target, f->size, f->align > 4 ? f->align : 4, &n);
    case RSF_F_TABLE:
        return check_table(c, target, f->table, depth + 1);
    case RSF_F_VEC_STRING:
    case RSF_F_VEC_TABLE:
        if ((err = check_vec(c, target, 4, 4, &n)))
            return err;
        for (uint32_t i = 0; i < n; i++) {
            size_t elem;
            if ((err = follow(c, target + 4 + 4 * (size_t)i, &elem)))
                return err;
            err = f->kind == RSF_F_VEC_STRING ? check_string(c, elem)
                                              : check_table(c, elem, f->table, depth + 1);
            if (err)
                return err;
        }
        return RSF_ERR_OK;
    default:
        return fail(c, target, RSF_ERR_BAD_VALUE);
    }
}

static int check_table(struct vctx *c, size_t tpos, const struct rsf_table_desc *d, int depth)
{
    if (depth > RSF_FB_MAX_DEPTH)
        return fail(c, tpos, RSF_ERR_TOO_DEEP);
    if (tpos % 4)
        return fail(c, tpos, RSF_ERR_BAD_ALIGN);
    if (tpos + 4 > c->size)
        return fail(c, tpos, RSF_ERR_BAD_OFFSET);
    int64_t vt = (int64_t)tpos - (int32_t)rd32(c->buf + tpos);
    if (vt < 0 || vt % 2 || (uint64_t)vt + 4 > c->size)
        return fail(c, tpos, RSF_ERR_BAD_VTABLE);
    uint16_t vtsize = rd16(c->buf + vt), tsize = rd16(c->buf + vt + 2);
    if (vtsize < 4 || vtsize % 2 || (uint64_t)vt + vtsize > c->size || tsize < 4 ||
        tpos + tsize > c->size)
        return fail(c, (size_t)vt, RSF_ERR_BAD_VTABLE);
    unsigned nslots = (vtsize - 4u) / 2;
    for (unsigned i = 0; i < d->nfields && i < nslots; i++) {
        uint16_t off = rd16(c->buf + vt + 4 + 2 * i);
        if (!off)
            continue;
        const struct rsf_field_desc *f = &d->fields[i];
        unsigned size, align;
        inline_layout(f, &size, &align);
        if ((size_t)off + size > tsize)
            return fail(c, (size_t)vt, RSF_ERR_BAD_VTABLE);
        if ((tpos + off) % align)
            return fail(c, tpos + off, RSF_ERR_BAD_ALIGN);
        if (!is_ref(f))
            continue;
        size_t target;
        int err = follow(c, tpos + off, &target);
        if (err || (err = check_ref(c, target, f, depth)))
            return err;
    }
    return RSF_ERR_OK;
}

int rsf_fb_verify(const uint8_t *buf, size_t size, const struct rsf_table_desc *root,
                  const char *ident, size_t *where)
{
    struct vctx c = { buf, size, 0 };
    int err = RSF_ERR_OK;
    size_t t;
    if (size < 12 || size > 0x7fffffffu)
        err = fail(&c, 0, RSF_ERR_BAD_PREFIX);
    else if (rd32(buf) != size - 4)
        err = fail(&c, 0, RSF_ERR_BAD_PREFIX);
    else if (memcmp(buf + 8, ident, 4) != 0)
        err = fail(&c, 8, RSF_ERR_BAD_IDENT);
    else if (!(err = follow(&c, 4, &t)))
        err = check_table(&c, t, root, 0);
    if (where)
        *where = c.where;
    return err;
}

/* ---- readers of a verified buffer ---- */

uint32_t rsf_fb_root(const uint8_t *buf)
{
    return 4 + rd32(buf + 4);
}

uint32_t rsf_fb_field(const uint8_t *buf, uint32_t tpos, unsigned slot)
{
    uint32_t vt = tpos - rd32(buf + tpos);
    uint16_t vtsize = rd16(buf + vt);
    if (4 + 2 * slot >= vtsize)
        return 0;
    uint16_t off = rd16(buf + vt + 4 + 2 * slot);
    return off ? tpos + off : 0;
}

#define RSF_FB_GETTER(name, type)                                               \
    type name(const uint8_t *buf, uint32_t tpos, unsigned slot, type dflt)      \
    {                                                                           \
        uint32_t at = rsf_fb_field(buf, tpos, slot);                            \
        type v = dflt;                                                          \
        if (at)                                                                 \
            memcpy(&v, buf + at, sizeof v);                                     \
        return v;                                                               \
    }
RSF_FB_GETTER(rsf_fb_u64, uint64_t)
RSF_FB_GETTER(rsf_fb_i64, int64_t)
RSF_FB_GETTER(rsf_fb_u32, uint32_t)
RSF_FB_GETTER(rsf_fb_i32, int32_t)
RSF_FB_GETTER(rsf_fb_u8, uint8_t)

uint32_t rsf_fb_deref(const uint8_t *buf, uint32_t tpos, unsigned slot)
{
    uint32_t at = rsf_fb_field(buf, tpos, slot);
    return at ? at + rd32(buf + at) : 0;
}

const char *rsf_fb_string_at(const uint8_t *buf, uint32_t spos, uint32_t *len)
{
    if (len)
        *len = rd32(buf + spos);
    return (const char *)buf + spos + 4;
}

uint32_t rsf_fb_vec_len(const uint8_t *buf, uint32_t vpos)
{
    return vpos ? rd32(buf + vpos) : 0;
}

uint32_t rsf_fb_vec_ref(const uint8_t *buf, uint32_t vpos, uint32_t i)
{
    uint32_t at = vpos + 4 + 4 * i;
    return at + rd32(buf + at);
}
