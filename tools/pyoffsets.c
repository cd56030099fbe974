/* Prints one line of preload/pyoffsets.h: the struct offsets the sampler
 * needs to walk a CPython 3.10-3.12 thread's frame chain, taken from that
 * version's own (internal) headers. tools/pyoffsets.sh compiles this once
 * per installed version; 3.13 and later publish _Py_DebugOffsets instead. */
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

int main(void)
{
#if PY_VERSION_HEX < 0x030B0000
    /* 3.10: PyThreadState.frame -> PyFrameObject chain (f_back), one native
     * _PyEval_EvalFrameDefault per Python frame; names from co_name. */
    printf("    { 0x%x, %zu, 0, %zu, %zu, 0, RS_PY_ENTRY_EACH, 0, %zu, %zu, %zu, %zu },\n",
           PY_MINOR_VERSION, offsetof(PyThreadState, frame), offsetof(PyFrameObject, f_back),
           offsetof(PyFrameObject, f_code), offsetof(PyCodeObject, co_filename),
           offsetof(PyCodeObject, co_name), sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject));
#elif PY_VERSION_HEX < 0x030C0000
    /* 3.11: tstate->cframe->current_frame -> _PyInterpreterFrame chain; one
     * native eval call runs frames up to one marked is_entry. */
    printf("    { 0x%x, %zu, %zu, %zu, %zu, %zu, RS_PY_ENTRY_FLAG, 0, %zu, %zu, %zu, %zu },\n",
           PY_MINOR_VERSION, offsetof(PyThreadState, cframe), offsetof(_PyCFrame, current_frame),
           offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, f_code),
           offsetof(_PyInterpreterFrame, is_entry), offsetof(PyCodeObject, co_filename),
           offsetof(PyCodeObject, co_qualname), sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject));
#else
    /* 3.12: as 3.11, but each eval call is marked by a shim frame on the C
     * stack (owner FRAME_OWNED_BY_CSTACK) outside the frames it runs. */
    printf("    { 0x%x, %zu, %zu, %zu, %zu, %zu, RS_PY_ENTRY_SHIM, %d, %zu, %zu, %zu, %zu },\n",
           PY_MINOR_VERSION, offsetof(PyThreadState, cframe), offsetof(_PyCFrame, current_frame),
           offsetof(_PyInterpreterFrame, previous), offsetof(_PyInterpreterFrame, f_code),
           offsetof(_PyInterpreterFrame, owner), (int)FRAME_OWNED_BY_CSTACK,
           offsetof(PyCodeObject, co_filename), offsetof(PyCodeObject, co_qualname),
           sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject));
#endif
    return 0;
}
