/* Messages for the trace format's error codes (see rsf_error.h). */
#include "formats/rsf_error.h"

static const char *const rsf_messages[] = {
#define RSF_ERR_MSG(name, msg) msg,
    RSF_ERRORS(RSF_ERR_MSG)
#undef RSF_ERR_MSG
};

const char *rsf_strerror(int err)
{
    if (err < 0 || (unsigned)err >= sizeof rsf_messages / sizeof rsf_messages[0])
        return "unknown error";
    return rsf_messages[err];
}
