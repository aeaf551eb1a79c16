/* hip_on_cuda: libhiprtc.so for a test session, implemented over NVRTC (no GPU needed).
 *
 * The source is compiled behind hip_to_cuda.h (the header bench/hip_on_nvrtc.py uses,
 * embedded at build time) for the sm_XX twin of --offload-arch's gfx target (hipf.h's
 * table), and the cubin is returned inside the code-object envelope (envelope.c) naming
 * that gfx target. hiprtc options are translated to NVRTC's; one without a translation
 * fails the compilation with a log naming it.
 */
#include <nvrtc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hipf.h"

/* hip_to_cuda.h's bytes, NUL-terminated (found through the assembler's -I). */
__asm__(".section .rodata\n"
        ".globl hipf_cuda_header\n"
        ".hidden hipf_cuda_header\n"
        "hipf_cuda_header:\n"
        ".incbin \"hip_to_cuda.h\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char hipf_cuda_header[];

typedef enum {
  HIPRTC_SUCCESS = 0,
  HIPRTC_ERROR_OUT_OF_MEMORY = 1,
  HIPRTC_ERROR_INVALID_INPUT = 3,
  HIPRTC_ERROR_INVALID_PROGRAM = 4,
  HIPRTC_ERROR_INVALID_OPTION = 5,
  HIPRTC_ERROR_COMPILATION = 6,
  HIPRTC_ERROR_INTERNAL_ERROR = 11,
} hiprtcResult; /* NVRTC numbers 0..11 the same way */

typedef struct {
  nvrtcProgram nvrtc;
  char *log;           /* the fixture's own messages, then NVRTC's log */
  size_t log_size;     /* including the NUL */
  unsigned char *code; /* the envelope */
  size_t code_size;
} hipf_program;

typedef hipf_program *hiprtcProgram;

#define MAX_OPTIONS 64

static hiprtcResult from_nvrtc(nvrtcResult result) {
  return result <= NVRTC_ERROR_INTERNAL_ERROR ? (hiprtcResult)result
                                              : HIPRTC_ERROR_INTERNAL_ERROR;
}

static void append_log(hipf_program *prog, const char *format, ...) {
  va_list args;
  va_start(args, format);
  int extra = vsnprintf(NULL, 0, format, args);
  va_end(args);
  size_t used = prog->log_size ? prog->log_size - 1 : 0;
  char *grown = realloc(prog->log, used + (size_t)extra + 1);
  if (grown == NULL) return;
  va_start(args, format);
  vsnprintf(grown + used, (size_t)extra + 1, format, args);
  va_end(args);
  prog->log = grown;
  prog->log_size = used + (size_t)extra + 1;
}

HIPF_API const char *hiprtcGetErrorString(hiprtcResult result) {
  return nvrtcGetErrorString((nvrtcResult)result);
}

HIPF_API hiprtcResult hiprtcVersion(int *major, int *minor) {
  if (major == NULL || minor == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  *major = HIPF_HIPRTC_MAJOR;
  *minor = HIPF_HIPRTC_MINOR;
  return HIPRTC_SUCCESS;
}

HIPF_API hiprtcResult hiprtcCreateProgram(hiprtcProgram *out, const char *source,
                                          const char *name, int num_headers,
                                          const char *const *headers,
                                          const char *const *include_names) {
  if (out == NULL || source == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  const char *file = name != NULL ? name : "default_program";
  /* the user's lines keep their numbers in NVRTC's messages */
  const char *line_format = "%s\n#line 1 \"%s\"\n%s";
  int length = snprintf(NULL, 0, line_format, hipf_cuda_header, file, source);
  char *full = malloc((size_t)length + 1);
  hipf_program *prog = calloc(1, sizeof *prog);
  if (full == NULL || prog == NULL) {
    free(full);
    free(prog);
    return HIPRTC_ERROR_OUT_OF_MEMORY;
  }
  snprintf(full, (size_t)length + 1, line_format, hipf_cuda_header, file, source);
  nvrtcResult result =
      nvrtcCreateProgram(&prog->nvrtc, full, file, num_headers, headers, include_names);
  free(full);
  if (result != NVRTC_SUCCESS) {
    free(prog);
    return from_nvrtc(result);
  }
  *out = prog;
  return HIPRTC_SUCCESS;
}

/* "gfx942:sramecc+:xnack-" -> "sm_90"; 0 when the base name has no twin. */
static int sm_of(const char *target, char *sm, size_t size) {
  size_t base = strcspn(target, ":");
#define HIPF_ARCH(gfx, features, cc_major, cc_minor)                                      \
  if (strlen(gfx) == base && strncmp(target, gfx, base) == 0) {                           \
    snprintf(sm, size, "--gpu-architecture=sm_%d%d", cc_major, cc_minor);                 \
    return 1;                                                                             \
  }
  HIPF_ARCHS(HIPF_ARCH)
#undef HIPF_ARCH
  return 0;
}

/* hiprtc's option -> NVRTC's (NULL: dropped); *ok = 0 when it has no translation. */
static const char *translate(hipf_program *prog, const char *option, char *arch, size_t arch_size,
                             char *target, size_t target_size, int *ok) {
  static const char offload[] = "--offload-arch=";
  *ok = 1;
  if (strncmp(option, offload, sizeof offload - 1) == 0) {
    const char *gfx = option + sizeof offload - 1;
    if (!sm_of(gfx, arch, arch_size)) {
      append_log(prog, "hip_on_cuda: --offload-arch=%s has no sm_XX twin in hipf.h's "
                 "HIPF_ARCHS\n", gfx);
      *ok = 0;
      return NULL;
    }
    snprintf(target, target_size, "amdgcn-amd-amdhsa--%s", gfx);
    return arch;
  }
  if (strcmp(option, "-ffp-contract=off") == 0) return "--fmad=false";
  if (strcmp(option, "-ffp-contract=fast") == 0 || strcmp(option, "-ffp-contract=on") == 0)
    return "--fmad=true";
  if (strncmp(option, "-std=", 5) == 0) return option; /* NVRTC spells it alike */
  if (option[0] == '-' && option[1] == 'O' && option[2] >= '0' && option[2] <= '3' &&
      option[3] == '\0')
    return NULL; /* NVRTC always optimizes; it has no -O */
  append_log(prog, "hip_on_cuda: hiprtc option '%s' has no NVRTC translation in hiprtc.c\n",
             option);
  *ok = 0;
  return NULL;
}

HIPF_API hiprtcResult hiprtcCompileProgram(hiprtcProgram prog, int num_options,
                                           const char **options) {
  if (prog == NULL) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (num_options < 0 || num_options > MAX_OPTIONS - 1) return HIPRTC_ERROR_INVALID_INPUT;
  const char *nvrtc_options[MAX_OPTIONS];
  char arch[64] = "", target[128] = "";
  int count = 0, all_ok = 1;
  /* as on_nvrtc.NVRTC_OPTIONS: no #177 "declared but never referenced" warnings */
  nvrtc_options[count++] = "--diag-suppress=177";
  for (int i = 0; i < num_options; ++i) {
    int ok;
    const char *translated =
        translate(prog, options[i], arch, sizeof arch, target, sizeof target, &ok);
    all_ok &= ok;
    if (translated != NULL) nvrtc_options[count++] = translated;
  }
  if (target[0] == '\0') {
    append_log(prog, "hip_on_cuda: no --offload-arch=<gfx target> given\n");
    all_ok = 0;
  }
  if (!all_ok) return HIPRTC_ERROR_INVALID_OPTION;
  nvrtcResult result = nvrtcCompileProgram(prog->nvrtc, count, nvrtc_options);
  size_t nvrtc_log_size = 0;
  if (nvrtcGetProgramLogSize(prog->nvrtc, &nvrtc_log_size) == NVRTC_SUCCESS &&
      nvrtc_log_size > 1) {
    char *nvrtc_log = malloc(nvrtc_log_size);
    if (nvrtc_log != NULL && nvrtcGetProgramLog(prog->nvrtc, nvrtc_log) == NVRTC_SUCCESS)
      append_log(prog, "%s", nvrtc_log);
    free(nvrtc_log);
  }
  if (result != NVRTC_SUCCESS) return from_nvrtc(result);
  size_t cubin_size = 0;
  result = nvrtcGetCUBINSize(prog->nvrtc, &cubin_size);
  if (result != NVRTC_SUCCESS) return from_nvrtc(result);
  char *cubin = malloc(cubin_size);
  if (cubin == NULL) return HIPRTC_ERROR_OUT_OF_MEMORY;
  result = nvrtcGetCUBIN(prog->nvrtc, cubin);
  if (result == NVRTC_SUCCESS) {
    free(prog->code);
    prog->code = hipf_envelope_wrap(target, cubin, cubin_size, &prog->code_size);
  }
  free(cubin);
  if (result != NVRTC_SUCCESS) return from_nvrtc(result);
  return prog->code != NULL ? HIPRTC_SUCCESS : HIPRTC_ERROR_OUT_OF_MEMORY;
}

HIPF_API hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram prog, size_t *size) {
  if (prog == NULL) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (size == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  *size = prog->log_size ? prog->log_size : 1;
  return HIPRTC_SUCCESS;
}

HIPF_API hiprtcResult hiprtcGetProgramLog(hiprtcProgram prog, char *log) {
  if (prog == NULL) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (log == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  if (prog->log_size)
    memcpy(log, prog->log, prog->log_size);
  else
    log[0] = '\0';
  return HIPRTC_SUCCESS;
}

HIPF_API hiprtcResult hiprtcGetCodeSize(hiprtcProgram prog, size_t *size) {
  if (prog == NULL) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (size == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  *size = prog->code_size;
  return HIPRTC_SUCCESS;
}

HIPF_API hiprtcResult hiprtcGetCode(hiprtcProgram prog, char *code) {
  if (prog == NULL) return HIPRTC_ERROR_INVALID_PROGRAM;
  if (code == NULL || prog->code == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  memcpy(code, prog->code, prog->code_size);
  return HIPRTC_SUCCESS;
}

HIPF_API hiprtcResult hiprtcDestroyProgram(hiprtcProgram *prog) {
  if (prog == NULL || *prog == NULL) return HIPRTC_ERROR_INVALID_PROGRAM;
  nvrtcDestroyProgram(&(*prog)->nvrtc);
  free((*prog)->log);
  free((*prog)->code);
  free(*prog);
  *prog = NULL;
  return HIPRTC_SUCCESS;
}
