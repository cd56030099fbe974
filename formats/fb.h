/* The subset of the FlatBuffers binary format that trace.fbs needs: a
 * front-to-back builder and a verifier, both driven by table descriptors
 * (formats/schema.c). There is no flatcc package, so this is written by hand
 * and held against Debian's flatc (JSON decoding and the C++ verifier). */
#ifndef RSF_FB_H
#define RSF_FB_H

#include <stddef.h>
#include <stdint.h>

enum rsf_fkind {
    RSF_F_BOOL, RSF_F_U8, RSF_F_U32, RSF_F_I32, RSF_F_U64, RSF_F_I64,
    RSF_F_STRUCT,     /* inline struct: size, align */
    RSF_F_STRING,
    RSF_F_TABLE,      /* sub-table: table */
    RSF_F_VEC_STRUCT, /* vector of structs: element size, align */
    RSF_F_VEC_STRING,
    RSF_F_VEC_TABLE   /* vector of tables: table */
};

struct rsf_table_desc;

struct rsf_field_desc {
    const char *name;
    uint8_t kind;          /* enum rsf_fkind */
    uint16_t size, align;  /* struct or vector element layout */
    const struct rsf_table_desc *table;
};

struct rsf_table_desc {
    const char *name;
    uint16_t nfields;
    const struct rsf_field_desc *fields;
};

/* One field's value for the builder. Unset fields are left out of the
 * table (readers then see the schema default). */
struct rsf_val {
    uint8_t set;
    uint64_t u;      /* scalar bits (sign-extended for signed kinds) */
    const void *p;   /* STRUCT: bytes; STRING: chars; VEC_STRUCT: elements;
                        VEC_STRING: const char *const[]; TABLE: const struct
                        rsf_val[]; VEC_TABLE: const struct rsf_val *const[] */
    uint32_t n;      /* STRING: length; vectors: element count */
};

/* An output buffer of fixed capacity; p must be 8-byte aligned. */
struct rsf_buf {
    uint8_t *p;
    size_t len, cap;
};

/* Upper bound of the bytes rsf_fb_finish() needs for this root table. */
size_t rsf_fb_bound(const struct rsf_table_desc *desc, const struct rsf_val *vals);

/* Writes one size-prefixed FlatBuffer with identifier ident (4 chars) and
 * the given root table into out (from out->len = 0). Returns RSF_ERR_OK, or
 * RSF_ERR_SPACE when out->cap is too small (out is then unusable). */
int rsf_fb_finish(struct rsf_buf *out, const struct rsf_table_desc *root,
                  const struct rsf_val *vals, const char *ident);

/* Verifies a whole size-prefixed buffer against root before anything reads
 * it: bounds, offsets, alignment, vtables, string terminators, depth.
 * buf must be 8-byte aligned. Returns RSF_ERR_OK or an error with *where set
 * to the byte offset in buf of the first fault. */
int rsf_fb_verify(const uint8_t *buf, size_t size, const struct rsf_table_desc *root,
                  const char *ident, size_t *where);

/* Readers for a verified buffer. A table is named by its byte position. */
uint32_t rsf_fb_root(const uint8_t *buf);
/* Position of field slot in table tpos, or 0 when absent. */
uint32_t rsf_fb_field(const uint8_t *buf, uint32_t tpos, unsigned slot);
uint64_t rsf_fb_u64(const uint8_t *buf, uint32_t tpos, unsigned slot, uint64_t dflt);
int64_t rsf_fb_i64(const uint8_t *buf, uint32_t tpos, unsigned slot, int64_t dflt);
uint32_t rsf_fb_u32(const uint8_t *buf, uint32_t tpos, unsigned slot, uint32_t dflt);
int32_t rsf_fb_i32(const uint8_t *buf, uint32_t tpos, unsigned slot, int32_t dflt);
uint8_t rsf_fb_u8(const uint8_t *buf, uint32_t tpos, unsigned slot, uint8_t dflt);
/* Target position of an offset field (string, vector or table), 0 if absent. */
uint32_t rsf_fb_deref(const uint8_t *buf, uint32_t tpos, unsigned slot);
/* A string at position spos: its characters (NUL-terminated) and length. */
const char *rsf_fb_string_at(const uint8_t *buf, uint32_t spos, uint32_t *len);
/* A vector at vpos: element count, and where its elements begin. */
uint32_t rsf_fb_vec_len(const uint8_t *buf, uint32_t vpos);
/* Element i of a vector of offsets (strings, tables): its target position. */
uint32_t rsf_fb_vec_ref(const uint8_t *buf, uint32_t vpos, uint32_t i);

#endif
