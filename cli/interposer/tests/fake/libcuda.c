/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A stand-in for libcuda.so.1 that the interposer's tests run under (no GPU needed): the
 * driver entry points the interposer hooks or calls, each appending one line to the file
 * named by FAKE_CUDA_LOG. A module remembers its image: `probed` in a launch line says
 * whether the launched function's module holds bpf2ptx code, i.e. whether the launch ran
 * an instrumented kernel. FAKE_CUDA_REFUSE_PROBED=1 makes loading probed PTX fail, as a
 * JIT error would.
 *
 * The interposer's own timer kernel (bpf2ptx_globaltimer_spin, which measures the
 * host/GPU clock offset) "runs" at its launch: it stores this process's CLOCK_MONOTONIC
 * plus FAKE_CUDA_GLOBALTIMER_OFFSET ns (default 0) as %globaltimer into its first
 * parameter's word, so a test knows the offset the interposer must find. Pinned host
 * memory is malloc'd; its device address is its host address. */
#include <stdarg.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int CUresult;
struct image { int id; int probed; int library; };
struct func { struct image *owner; char name[256]; int kernel; };

static int next_id;

static void say(const char *fmt, ...) {
	const char *path = getenv("FAKE_CUDA_LOG");
	FILE *f = path ? fopen(path, "a") : NULL;
	if (!f) return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static CUresult load(void **out, const char *text, int library) {
	int probed = text && strstr(text, "bpf2ptx_") != NULL;
	if (text && strstr(text, "bpf2ptx_globaltimer_spin")) {
		struct image *m = calloc(1, sizeof *m);
		m->id = 1000;
		*out = m;
		say("load clock");
		return 0;
	}
	if (text && !strncmp(text, "FAKECUBIN\n", 10)) say("load cubin");
	if (probed && getenv("FAKE_CUDA_REFUSE_PROBED")) {
		say("refuse probed");
		return 218; /* CUDA_ERROR_INVALID_PTX */
	}
	struct image *m = calloc(1, sizeof *m);
	m->id = ++next_id;
	m->probed = probed;
	m->library = library;
	*out = m;
	say("load %s %d probed=%d", library ? "library" : "module", m->id, m->probed);
	return 0;
}

static CUresult get(void **out, void *owner, const char *name, int kernel) {
	struct func *f = calloc(1, sizeof *f);
	f->owner = owner;
	f->kernel = kernel;
	snprintf(f->name, sizeof f->name, "%s", name);
	*out = f;
	return 0;
}

CUresult cuInit(unsigned flags) { (void)flags; return 0; }
CUresult cuModuleLoadData(void **m, const void *image) { return load(m, image, 0); }
CUresult cuModuleLoadDataEx(void **m, const void *image, unsigned n, int *o, void **v) {
	(void)n; (void)o; (void)v;
	return load(m, image, 0);
}
CUresult cuModuleUnload(void *m) { say("unload %d", ((struct image *)m)->id); free(m); return 0; }
CUresult cuModuleGetFunction(void **f, void *m, const char *name) { return get(f, m, name, 0); }
CUresult cuLibraryLoadData(void **l, const void *code, int *a, void **b, unsigned c, int *d,
			   void **e, unsigned g) {
	(void)a; (void)b; (void)c; (void)d; (void)e; (void)g;
	return load(l, code, 1);
}
CUresult cuLibraryGetKernel(void **k, void *l, const char *name) { return get(k, l, name, 1); }
CUresult cuLibraryGetModule(void **m, void *l) { *m = l; return 0; }
CUresult cuKernelGetFunction(void **f, void *k) {
	struct func *kf = k;
	return get(f, kf->owner, kf->name, 0);
}

static CUresult launch(const char *how, void *fp) {
	struct func *f = fp;
	say("launch %s %s module=%d probed=%d", how, f->name, f->owner->id, f->owner->probed);
	return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned sh, void *s, void **p, void **x) {
	(void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sh; (void)s; (void)x;
	if (!strcmp(((struct func *)f)->name, "bpf2ptx_globaltimer_spin")) {
		struct timespec ts;
		const char *off = getenv("FAKE_CUDA_GLOBALTIMER_OFFSET");
		clock_gettime(CLOCK_MONOTONIC, &ts);
		unsigned long long now = (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
		unsigned long long out = *(unsigned long long *)p[0];
		*(volatile unsigned long long *)(size_t)out = now + (off ? strtoull(off, 0, 10) : 0);
		say("launch clock");
		return 0;
	}
	return launch("legacy", f);
}
CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			     unsigned by, unsigned bz, unsigned sh, void *s, void **p, void **x) {
	(void)gx; (void)gy; (void)gz; (void)bx; (void)by; (void)bz; (void)sh; (void)s; (void)p; (void)x;
	return launch("ptsz", f);
}

/* Module globals: every `bpf2ptx_*` name has 64 bytes (a descriptor's size), each the
 * length of its name, so a snapshot shows which symbol each copy came from; the same name
 * of one module is the same memory (FAKE_CUDA_ZERO_GLOBALS=1: zeros, an unbound map).
 * Device pointers are host pointers. */
static CUresult global(unsigned long long *addr, size_t *size, void *m, const char *name) {
	static struct { void *m; char name[128]; unsigned char *b; } seen[256];
	static int n;
	if (strncmp(name, "bpf2ptx_", 8)) return 500;
	for (int i = 0; i < n; i++)
		if (seen[i].m == m && !strcmp(seen[i].name, name)) {
			*addr = (unsigned long long)(size_t)seen[i].b;
			*size = 64;
			return 0;
		}
	if (n == 256) return 2;
	unsigned char *b = malloc(64);
	memset(b, getenv("FAKE_CUDA_ZERO_GLOBALS") ? 0 : (int)strlen(name), 64);
	seen[n].m = m;
	snprintf(seen[n].name, sizeof seen[n].name, "%s", name);
	seen[n++].b = b;
	*addr = (unsigned long long)(size_t)b;
	*size = 64;
	return 0;
}
CUresult cuModuleGetGlobal_v2(unsigned long long *a, size_t *n, void *m, const char *name) {
	return global(a, n, m, name);
}
CUresult cuLibraryGetGlobal(unsigned long long *a, size_t *n, void *l, const char *name) {
	return global(a, n, l, name);
}
CUresult cuStreamCreate(void **s, unsigned flags) { *s = (void *)0x5; say("stream flags=%u", flags); return 0; }
CUresult cuStreamSynchronize(void *s) { (void)s; return 0; }
CUresult cuMemcpyDtoHAsync_v2(void *dst, unsigned long long src, size_t n, void *s) {
	(void)s;
	memcpy(dst, (void *)(size_t)src, n);
	return 0;
}
CUresult cuMemAlloc_v2(unsigned long long *p, size_t n) {
	*p = (unsigned long long)(size_t)malloc(n);
	say("alloc %zu", n);
	return 0;
}
CUresult cuMemFree_v2(unsigned long long p) { free((void *)(size_t)p); say("free"); return 0; }
CUresult cuMemsetD8_v2(unsigned long long p, unsigned char v, size_t n) {
	memset((void *)(size_t)p, v, n);
	return 0;
}
CUresult cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) {
	memcpy((void *)(size_t)d, (void *)(size_t)s, n);
	say("dtod %zu", n);
	return 0;
}
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
	memcpy((void *)(size_t)d, s, n);
	say("htod %zu", n);
	return 0;
}
/* The linker: a "cubin" is the PTX behind a marker line. */
struct link { char *text; size_t n; };
CUresult cuLinkCreate_v2(unsigned n, int *o, void **v, void **state) {
	(void)n; (void)o; (void)v;
	*state = calloc(1, sizeof(struct link));
	return 0;
}
CUresult cuLinkAddData_v2(void *state, unsigned type, void *data, size_t size, const char *name,
			  unsigned n, int *o, void **v) {
	(void)type; (void)name; (void)n; (void)o; (void)v;
	struct link *l = state;
	l->text = malloc(size + 16);
	memcpy(l->text, "FAKECUBIN\n", 10);
	memcpy(l->text + 10, data, size);
	l->n = size + 10;
	return 0;
}
CUresult cuLinkComplete(void *state, void **cubin, size_t *size) {
	struct link *l = state;
	*cubin = l->text;
	*size = l->n;
	say("link");
	return 0;
}
CUresult cuLinkDestroy(void *state) { free(((struct link *)state)->text); free(state); return 0; }
CUresult cuCtxGetDevice(int *d) { *d = 0; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attr, int d) { (void)d; *v = attr == 75 ? 9 : 0; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = (void *)0x1; return 0; }
CUresult cuCtxSetCurrent(void *c) { (void)c; return 0; }
CUresult cuCtxSynchronize(void) { say("synchronize"); return 0; }
CUresult cuMemHostAlloc(void **p, size_t n, unsigned flags) {
	*p = malloc(n);
	say("host alloc %zu flags=%u", n, flags);
	return 0;
}
CUresult cuMemHostGetDevicePointer_v2(unsigned long long *d, void *p, unsigned flags) {
	(void)flags;
	*d = (unsigned long long)(size_t)p;
	return 0;
}
CUresult cuStreamQuery(void *s) { (void)s; return 0; }
CUresult cuStreamIsCapturing(void *s, int *status) { (void)s; *status = 0; return 0; }

/* An explicit graph kernel node (CUDA_KERNEL_NODE_PARAMS_v2): logged as a launch. */
struct node_params {
	void *func;
	unsigned grid[3], block[3], shared;
	void **params, **extra;
	void *kern, *ctx;
};
CUresult cuGraphAddKernelNode_v2(void **node, void *graph, const void **deps, size_t n,
				 const struct node_params *p) {
	(void)graph; (void)deps; (void)n;
	*node = (void *)0x9;
	return launch("graph", p->func ? p->func : p->kern);
}

#define ENTRY(n) { #n, (void *)n }
static const struct { const char *name; void *fn; } table[] = {
	ENTRY(cuInit), ENTRY(cuModuleLoadData), ENTRY(cuModuleLoadDataEx), ENTRY(cuModuleUnload),
	ENTRY(cuModuleGetFunction), ENTRY(cuLibraryLoadData), ENTRY(cuLibraryGetKernel),
	ENTRY(cuLibraryGetModule), ENTRY(cuKernelGetFunction), ENTRY(cuLaunchKernel),
	{ "cuModuleGetGlobal", (void *)cuModuleGetGlobal_v2 }, ENTRY(cuLibraryGetGlobal),
	ENTRY(cuStreamCreate), ENTRY(cuStreamSynchronize),
	{ "cuMemcpyDtoHAsync", (void *)cuMemcpyDtoHAsync_v2 }, ENTRY(cuCtxGetCurrent),
	ENTRY(cuCtxSetCurrent), ENTRY(cuCtxSynchronize),
	{ "cuMemAlloc", (void *)cuMemAlloc_v2 }, { "cuMemFree", (void *)cuMemFree_v2 },
	{ "cuMemsetD8", (void *)cuMemsetD8_v2 }, { "cuMemcpyDtoD", (void *)cuMemcpyDtoD_v2 },
	{ "cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2 },
	{ "cuLinkCreate", (void *)cuLinkCreate_v2 }, { "cuLinkAddData", (void *)cuLinkAddData_v2 },
	ENTRY(cuLinkComplete), ENTRY(cuLinkDestroy), ENTRY(cuCtxGetDevice),
	ENTRY(cuDeviceGetAttribute), ENTRY(cuDriverGetVersion),
	{ "cuGraphAddKernelNode", (void *)cuGraphAddKernelNode_v2 },
	ENTRY(cuMemHostAlloc), { "cuMemHostGetDevicePointer", (void *)cuMemHostGetDevicePointer_v2 },
	ENTRY(cuStreamQuery), ENTRY(cuStreamIsCapturing),
};

CUresult cuGetProcAddress_v2(const char *name, void **fn, int version, unsigned long long flags,
			     int *status) {
	(void)version;
	if (status) *status = 0;
	if (!strcmp(name, "cuLaunchKernel") && (flags & 2)) {
		*fn = (void *)cuLaunchKernel_ptsz;
		return 0;
	}
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
		if (!strcmp(table[i].name, name)) {
			*fn = table[i].fn;
			return 0;
		}
	*fn = NULL;
	return 500; /* CUDA_ERROR_NOT_FOUND */
}
