/* SPDX-License-Identifier: Apache-2.0 */
/* vmm/loader.c: map kernel files, and load ELF64 executables into guest RAM, all-or-nothing. */
#include "vmm/loader.h"

#include "lib/errbuf.h"
#include "vmm/log.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *loader_src_name(const struct loader_src *src, char *buf, size_t len)
{
	if (src->path)
		return src->path;
	snprintf(buf, len, "descriptor %d", src->fd);
	return buf;
}

int loader_src_open(const struct loader_src *src, const char *what, uint64_t max, uint64_t *size)
{
	char msg[512], name[32];
	const char *n = loader_src_name(src, name, sizeof(name));
	struct stat st;
	int err;

	int fd = src->path ? open(src->path, O_RDONLY | O_CLOEXEC) : src->fd;
	if (fd < 0) {
		err = errno;
		snprintf(msg, sizeof(msg), "cannot open %s %s", what, n);
		vmm_log_setup(msg, err, "check the path (make builds guest images)");
		return -err;
	}
	if (fstat(fd, &st) < 0) {
		err = errno;
		snprintf(msg, sizeof(msg), "cannot stat %s %s", what, n);
		vmm_log_setup(msg, err, NULL);
		goto fail;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		err = ENOEXEC;
		snprintf(msg, sizeof(msg), "%s %s is empty or not a regular file", what, n);
		vmm_log_setup(msg, 0, "rebuild it with make");
		goto fail;
	}
	if ((uint64_t)st.st_size > max) {
		err = EFBIG;
		snprintf(msg, sizeof(msg), "%s %s is %lld bytes, more than the %llu accepted", what,
			 n, (long long)st.st_size, (unsigned long long)max);
		vmm_log_setup(msg, 0, "is this really a guest kernel or initramfs?");
		goto fail;
	}
	*size = (uint64_t)st.st_size;
	return fd;
fail:
	if (src->path)
		close(fd);
	return -err;
}

int loader_image_map(const struct loader_src *src, const char *what, uint64_t max,
		     struct loader_image *im)
{
	char msg[512], name[32];
	uint64_t size;
	int err = 0;

	im->data = NULL;
	im->len = 0;
	int fd = loader_src_open(src, what, max, &size);
	if (fd < 0)
		return fd;
	/* From offset 0 whatever the descriptor's position: mmap ignores it. */
	void *p = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		err = errno;
		snprintf(msg, sizeof(msg), "cannot map %s %s", what,
			 loader_src_name(src, name, sizeof(name)));
		vmm_log_setup(msg, err, NULL);
	} else {
		im->data = p;
		im->len = (size_t)size;
	}
	if (src->path)
		close(fd);
	return -err;
}

void loader_image_unmap(struct loader_image *im)
{
	if (im->data)
		munmap((void *)(uintptr_t)im->data, im->len);
	im->data = NULL;
	im->len = 0;
}

int loader_elf_load(const struct gmem *gm, const uint8_t *img, size_t len, uint64_t min_gpa,
		    struct loader_result *out, char *err, size_t errlen)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph[LOADER_ELF_MAX_PHDRS];
	unsigned nload = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	int entry_ok = 0;

	if (len > LOADER_IMAGE_MAX)
		return errbuf_fail(err, errlen, -EFBIG, "ELF image larger than the loader accepts");
	if (!img || len < sizeof(eh))
		return errbuf_fail(err, errlen, -ENOEXEC, "ELF header truncated");
	memcpy(&eh, img, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_ident[EI_VERSION] != EV_CURRENT)
		return errbuf_fail(err, errlen, -ENOEXEC, "not a little-endian ELF64 file");
	if (eh.e_machine != EM_X86_64 || eh.e_type != ET_EXEC)
		return errbuf_fail(err, errlen, -ENOEXEC, "not an x86-64 ELF executable");
	if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 ||
	    eh.e_phnum > LOADER_ELF_MAX_PHDRS)
		return errbuf_fail(err, errlen, -ENOEXEC,
				   "ELF program header table has a bad entry size or count");
	if (eh.e_phoff > len || (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr) > len - eh.e_phoff)
		return errbuf_fail(err, errlen, -ENOEXEC, "ELF program headers truncated");
	memcpy(ph, img + eh.e_phoff, (size_t)eh.e_phnum * sizeof(Elf64_Phdr));

	/* Check everything before writing anything: a refused image leaves RAM untouched. */
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		if (p->p_offset > len || p->p_filesz > len - p->p_offset)
			return errbuf_fail(err, errlen, -ENOEXEC,
					   "ELF segment %u lies beyond the end of the file", i);
		if (p->p_filesz > p->p_memsz)
			return errbuf_fail(err, errlen, -ENOEXEC,
					   "ELF segment %u has more file bytes than memory bytes",
					   i);
		if (p->p_memsz > LOADER_IMAGE_MAX)
			return errbuf_fail(err, errlen, -EFBIG, "ELF segment %u is oversized", i);
		if (p->p_paddr < min_gpa)
			return errbuf_fail(
				err, errlen, -EINVAL,
				"ELF segment %u loads below 1 MiB, over the boot structures", i);
		if (!gmem_ptr(gm, p->p_paddr, p->p_memsz))
			return errbuf_fail(
				err, errlen, -EFBIG,
				"ELF segment %u does not fit in guest RAM (give more --mem)", i);
		for (unsigned j = 0; j < i; j++) {
			const Elf64_Phdr *q = &ph[j];
			if (q->p_type != PT_LOAD || q->p_memsz == 0)
				continue;
			/* Both ranges are inside RAM (checked above), so neither end wraps. */
			if (p->p_paddr < q->p_paddr + q->p_memsz &&
			    q->p_paddr < p->p_paddr + p->p_memsz)
				return errbuf_fail(err, errlen, -EINVAL,
						   "ELF segment %u overlaps an earlier segment", i);
		}
		if (eh.e_entry >= p->p_paddr && eh.e_entry - p->p_paddr < p->p_filesz)
			entry_ok = 1;
		if (p->p_paddr < lo)
			lo = p->p_paddr;
		if (p->p_paddr + p->p_memsz > hi)
			hi = p->p_paddr + p->p_memsz;
		nload++;
	}
	if (!nload)
		return errbuf_fail(err, errlen, -ENOEXEC, "ELF file has no loadable segment");
	if (!entry_ok)
		return errbuf_fail(err, errlen, -ENOEXEC,
				   "ELF entry point lies outside every loaded segment");

	for (unsigned i = 0; i < eh.e_phnum; i++) {
		const Elf64_Phdr *p = &ph[i];
		if (p->p_type != PT_LOAD || p->p_memsz == 0)
			continue;
		uint8_t *dst = gmem_ptr(gm, p->p_paddr, p->p_memsz);
		memcpy(dst, img + p->p_offset, (size_t)p->p_filesz);
		memset(dst + p->p_filesz, 0, (size_t)(p->p_memsz - p->p_filesz));
	}
	out->entry = eh.e_entry;
	out->start = lo;
	out->end = hi;
	return 0;
}
