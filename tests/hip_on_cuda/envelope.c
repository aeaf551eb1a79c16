/* hip_on_cuda: the code-object envelope (see hipf.h). Linked into libhiprtc.so (wrap) and
 * libamdhip64.so (unwrap); nothing here is exported. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "hipf.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#define HIPF_ELFOSABI_AMDGPU_HSA 64
#define HIPF_NT_AMDGPU_METADATA 32
#define HIPF_NSECTIONS 4 /* null, .note, the image, .shstrtab */

static const char SHSTRTAB[] = "\0.note\0" HIPF_IMAGE_SECTION "\0.shstrtab";
enum { NAME_NOTE = 1, NAME_IMAGE = 7, NAME_SHSTRTAB = 8 + sizeof(HIPF_IMAGE_SECTION) - 1 };

static size_t round_up(size_t value, size_t align) { return (value + align - 1) / align * align; }

static unsigned char *put_str(unsigned char *out, const char *text) {
  size_t len = strlen(text);
  if (len < 32) {
    *out++ = (unsigned char)(0xa0 | len);
  } else {
    *out++ = 0xd9;
    *out++ = (unsigned char)len;
  }
  memcpy(out, text, len);
  return out + len;
}

/* {"amdhsa.version": [1, 2], "amdhsa.target": target, "amdhsa.kernels": []} */
static size_t metadata(const char *target, unsigned char *out) {
  unsigned char *p = out;
  *p++ = 0x83;
  p = put_str(p, "amdhsa.version");
  *p++ = 0x92;
  *p++ = 1;
  *p++ = 2;
  p = put_str(p, "amdhsa.target");
  p = put_str(p, target);
  p = put_str(p, "amdhsa.kernels");
  *p++ = 0x90;
  return (size_t)(p - out);
}

unsigned char *hipf_envelope_wrap(const char *target, const void *image, size_t image_size,
                                  size_t *size) {
  unsigned char desc[128];
  if (strlen(target) > 64) return NULL; /* desc holds the fixed keys and <= 64 more */
  size_t desc_size = metadata(target, desc);
  size_t note_off = sizeof(Elf64_Ehdr);
  size_t note_size = sizeof(Elf64_Nhdr) + 8 + round_up(desc_size, 4);
  size_t image_off = round_up(note_off + note_size, 16);
  size_t strtab_off = image_off + image_size;
  size_t sh_off = round_up(strtab_off + sizeof(SHSTRTAB), 8);
  size_t total = sh_off + HIPF_NSECTIONS * sizeof(Elf64_Shdr);
  unsigned char *elf = calloc(1, total);
  if (elf == NULL) return NULL;

  Elf64_Ehdr *eh = (Elf64_Ehdr *)elf;
  memcpy(eh->e_ident, ELFMAG, SELFMAG);
  eh->e_ident[EI_CLASS] = ELFCLASS64;
  eh->e_ident[EI_DATA] = ELFDATA2LSB;
  eh->e_ident[EI_VERSION] = EV_CURRENT;
  eh->e_ident[EI_OSABI] = HIPF_ELFOSABI_AMDGPU_HSA;
  eh->e_ident[EI_ABIVERSION] = 2; /* code object v4 */
  eh->e_type = ET_DYN;
  eh->e_machine = EM_AMDGPU;
  eh->e_version = EV_CURRENT;
  eh->e_shoff = sh_off;
  eh->e_ehsize = sizeof(Elf64_Ehdr);
  eh->e_shentsize = sizeof(Elf64_Shdr);
  eh->e_shnum = HIPF_NSECTIONS;
  eh->e_shstrndx = HIPF_NSECTIONS - 1;

  Elf64_Nhdr *nh = (Elf64_Nhdr *)(elf + note_off);
  nh->n_namesz = 7;
  nh->n_descsz = (Elf64_Word)desc_size;
  nh->n_type = HIPF_NT_AMDGPU_METADATA;
  memcpy(elf + note_off + sizeof(Elf64_Nhdr), "AMDGPU", 7);
  memcpy(elf + note_off + sizeof(Elf64_Nhdr) + 8, desc, desc_size);
  memcpy(elf + image_off, image, image_size);
  memcpy(elf + strtab_off, SHSTRTAB, sizeof(SHSTRTAB));

  Elf64_Shdr *sh = (Elf64_Shdr *)(elf + sh_off);
  sh[1] = (Elf64_Shdr){.sh_name = NAME_NOTE, .sh_type = SHT_NOTE, .sh_offset = note_off,
                       .sh_size = note_size, .sh_addralign = 4};
  sh[2] = (Elf64_Shdr){.sh_name = NAME_IMAGE, .sh_type = SHT_PROGBITS, .sh_offset = image_off,
                       .sh_size = image_size, .sh_addralign = 16};
  sh[3] = (Elf64_Shdr){.sh_name = NAME_SHSTRTAB, .sh_type = SHT_STRTAB,
                       .sh_offset = strtab_off, .sh_size = sizeof(SHSTRTAB), .sh_addralign = 1};
  *size = total;
  return elf;
}

const void *hipf_envelope_image(const void *elf, size_t *image_size) {
  const unsigned char *bytes = elf;
  const Elf64_Ehdr *eh = elf;
  if (elf == NULL || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
      eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_machine != EM_AMDGPU ||
      eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum != HIPF_NSECTIONS ||
      eh->e_shstrndx != HIPF_NSECTIONS - 1)
    return NULL;
  const Elf64_Shdr *sh = (const Elf64_Shdr *)(bytes + eh->e_shoff);
  const char *names = (const char *)bytes + sh[eh->e_shstrndx].sh_offset;
  if (sh[eh->e_shstrndx].sh_size != sizeof(SHSTRTAB) ||
      memcmp(names, SHSTRTAB, sizeof(SHSTRTAB)) != 0 || sh[2].sh_name != NAME_IMAGE)
    return NULL;
  *image_size = sh[2].sh_size;
  return bytes + sh[2].sh_offset;
}
