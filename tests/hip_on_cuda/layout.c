/* hip_on_cuda: prints the fixture's ABI tables as JSON, for the tests that compare them
 * with hip-python's (struct offsets, enum values) without a GPU. Never part of a library. */
#include <stddef.h>
#include <stdio.h>

#include "hipf.h"

int main(void) {
  printf("{\"hipDeviceProp_tR0600\": {\"size\": %zu, \"fields\": {", sizeof(hipDeviceProp_tR0600));
  const char *sep = "";
#define HIPF_OFFSET(type, name, dims)                                                     \
  printf("%s\"%s\": %zu", sep, #name, offsetof(hipDeviceProp_tR0600, name));              \
  sep = ", ";
  HIPF_PROP_FIELDS(HIPF_OFFSET)
#undef HIPF_OFFSET
  printf("}},\n \"hipError_t\": {");
  sep = "";
#define HIPF_VALUE(name, value)                                                           \
  printf("%s\"%s\": %d", sep, #name, value);                                              \
  sep = ", ";
  HIPF_ERRORS(HIPF_VALUE)
  printf("},\n \"hipDeviceAttribute_t\": {");
  sep = "";
#define HIPF_ATTR_VALUE(name, value, cuda) HIPF_VALUE(name, value)
  HIPF_ATTRIBUTES(HIPF_ATTR_VALUE)
  printf("},\n \"archs\": [");
  sep = "";
#define HIPF_ARCH_ROW(gfx, features, major, minor)                                        \
  printf("%s[\"%s\", \"%s\", %d, %d]", sep, gfx, features, major, minor);                 \
  sep = ", ";
  HIPF_ARCHS(HIPF_ARCH_ROW)
  printf("],\n \"hip_version\": %d}\n", HIPF_HIP_VERSION);
  return 0;
}
