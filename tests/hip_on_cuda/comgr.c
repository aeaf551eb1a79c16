/* hip_on_cuda: libamd_comgr.so for a test session. gompute_hip asks comgr which targets
 * its compiler supports (and comgr's version, part of the compiler identity); this one
 * answers with the gfx names the fixture's hiprtc compiles (hipf.h's HIPF_ARCHS). */
#include <stddef.h>

#include "hipf.h"

typedef enum { AMD_COMGR_STATUS_SUCCESS = 0, AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT = 2 }
    amd_comgr_status_t;

static const char *const ISA_NAMES[] = {
#define HIPF_ISA(gfx, features, cc_major, cc_minor) "amdgcn-amd-amdhsa--" gfx,
    HIPF_ARCHS(HIPF_ISA)
#undef HIPF_ISA
};

HIPF_API void amd_comgr_get_version(size_t *major, size_t *minor) {
  *major = HIPF_COMGR_MAJOR;
  *minor = HIPF_COMGR_MINOR;
}

HIPF_API amd_comgr_status_t amd_comgr_get_isa_count(size_t *count) {
  if (count == NULL) return AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT;
  *count = sizeof ISA_NAMES / sizeof ISA_NAMES[0];
  return AMD_COMGR_STATUS_SUCCESS;
}

HIPF_API amd_comgr_status_t amd_comgr_get_isa_name(size_t index, const char **name) {
  if (name == NULL || index >= sizeof ISA_NAMES / sizeof ISA_NAMES[0])
    return AMD_COMGR_STATUS_ERROR_INVALID_ARGUMENT;
  *name = ISA_NAMES[index];
  return AMD_COMGR_STATUS_SUCCESS;
}
