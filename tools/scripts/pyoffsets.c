/* Prints one line of preload/pyoffsets.h: the struct offsets the sampler
 * needs to walk a CPython 3.10-3.12 thread's frame chain and to name a code
 * object and the line a frame is at, taken from that version's own
 * (internal) headers. tools/scripts/pyoffsets.sh compiles this once per installed
 * version; 3.13 and later publish _Py_DebugOffsets instead. */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stddef.h>
#include <stdio.h>

#if PY_VERSION_HEX >= 0x030B0000
#include "internal/pycore_frame.h"
#else
#include <frameobject.h>
#endif
#if PY_VERSION_HEX >= 0x030D0000
#error "3.13 and later: the sampler reads _Py_DebugOffsets at run time"
#endif

/* The fields every version has, after the frame's. */
static void common(void)
{
    printf("\n      .code_filename = %zu, .code_name = %zu, .code_linetable = %zu, .code_firstlineno = %zu,",
           offsetof(PyCodeObject, co_filename),
#if PY_VERSION_HEX >= 0x030B0000
           offsetof(PyCodeObject, co_qualname),
#else
           offsetof(PyCodeObject, co_name),
#endif
           offsetof(PyCodeObject, co_linetable), offsetof(PyCodeObject, co_firstlineno));
    printf("\n      .ascii_size = %zu, .compact_size = %zu, .bytes_size = %zu, .bytes_data = %zu },\n",
           sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject), offsetof(PyVarObject, ob_size),
           offsetof(PyBytesObject, ob_sval));
}

int main(void)
{
#if PY_VERSION_HEX < 0x030B0000
    /* 3.10: PyThreadState.frame -> PyFrameObject chain (f_back), one native
     * _PyEval_EvalFrameDefault per Python frame; names from co_name; the
     * frame's instruction is f_lasti, an index in code units. */
    printf("    { .minor = 0x%x, .tstate_frame = %zu, .frame_previous = %zu, .frame_code = %zu,\n"
           "      .entry_mode = RS_PY_ENTRY_EACH, .frame_instr = %zu, .instr_index = 1,",
           PY_MINOR_VERSION, offsetof(PyThreadState, frame), offsetof(PyFrameObject, f_back),
           offsetof(PyFrameObject, f_code), offsetof(PyFrameObject, f_lasti));
#elif PY_VERSION_HEX < 0x030C0000
    /* 3.11: tstate->cframe->current_frame -> _PyInterpreterFrame chain; one
     * native eval call runs frames up to one marked is_entry; prev_instr
     * points into the code object's own co_code_adaptive. */
    printf("    { .minor = 0x%x, .tstate_frame = %zu, .cframe_current = %zu, .tstate_chunk = %zu,\n"
           "      .frame_previous = %zu, .frame_code = %zu, .frame_entry = %zu, .entry_mode = RS_PY_ENTRY_FLAG,\n"
           "      .frame_instr = %zu, .code_units = %zu,",
           PY_MINOR_VERSION, offsetof(PyThreadState, cframe), offsetof(_PyCFrame, current_frame),
           offsetof(PyThreadState, datastack_chunk),
           offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, f_code),
           offsetof(_PyInterpreterFrame, is_entry), offsetof(_PyInterpreterFrame, prev_instr),
           offsetof(PyCodeObject, co_code_adaptive));
#else
    /* 3.12: as 3.11, but each eval call is marked by a shim frame on the C
     * stack (owner FRAME_OWNED_BY_CSTACK) outside the frames it runs. */
    printf("    { .minor = 0x%x, .tstate_frame = %zu, .cframe_current = %zu, .tstate_chunk = %zu,\n"
           "      .frame_previous = %zu, .frame_code = %zu, .frame_entry = %zu, .entry_mode = RS_PY_ENTRY_SHIM,\n"
           "      .cstack_owner = %d, .frame_instr = %zu, .code_units = %zu,",
           PY_MINOR_VERSION, offsetof(PyThreadState, cframe), offsetof(_PyCFrame, current_frame),
           offsetof(PyThreadState, datastack_chunk),
           offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, f_code),
           offsetof(_PyInterpreterFrame, owner), (int)FRAME_OWNED_BY_CSTACK,
           offsetof(_PyInterpreterFrame, prev_instr), offsetof(PyCodeObject, co_code_adaptive));
#endif
    common();
    return 0;
}
