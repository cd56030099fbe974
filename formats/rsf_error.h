/* Error codes of the trace format layer (encoder, verifier, frame reader),
 * generated with their messages from one list. Functions return the code;
 * callers add the file and byte offset. */
#ifndef RSF_ERROR_H
#define RSF_ERROR_H

#define RSF_ERRORS(X) \
    X(OK,           "ok") \
    X(EOF,          "end of file") \
    X(IO,           "read error") \
    X(NOMEM,        "out of memory") \
    X(TRUNCATED,    "cut short: the last frame is incomplete") \
    X(BAD_MAGIC,    "not an LZ4 frame (bad magic number)") \
    X(LZ4,          "corrupt LZ4 frame") \
    X(NO_SIZE,      "LZ4 frame without a content size") \
    X(TOO_BIG,      "chunk larger than the format allows") \
    X(SPACE,        "output buffer too small") \
    X(BAD_PREFIX,   "size prefix does not match the chunk") \
    X(BAD_IDENT,    "wrong file identifier (expected RSDT)") \
    X(BAD_OFFSET,   "offset out of bounds") \
    X(BAD_ALIGN,    "misaligned table, vector or field") \
    X(BAD_VTABLE,   "bad vtable") \
    X(BAD_STRING,   "string not terminated") \
    X(TOO_DEEP,     "tables nested too deeply") \
    X(BAD_VALUE,    "field value out of range")

enum rsf_err {
#define RSF_ERR_ENUM(name, msg) RSF_ERR_##name,
    RSF_ERRORS(RSF_ERR_ENUM)
#undef RSF_ERR_ENUM
};

/* The message for an error code; never NULL. */
const char *rsf_strerror(int err);

#endif
