/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A stand-in for libcuda.so.1 that the interposer's tests run under (no GPU needed): the
 * driver entry points the interposer hooks or calls, each appending one line to the file
 * named by FAKE_CUDA_LOG. A module remembers its image: `probed` in a launch line says
 * whether the launched function's module holds bpf2ptx code, i.e. whether the launch ran
 * an instrumented kernel. FAKE_CUDA_REFUSE_PROBED=1 makes loading probed PTX fail, as a
 * JIT error would.
 *
 * Two devices: context 0x1 is device 0 (current at the start, in every thread), context
 * 0x2 device 1; a module belongs to the device current at its load, a library to every
 * context (its kernels run, and its globals are, in the context current at the call), and
 * a launch line names the device (`device=D`).
 *
 * Module globals are what the module's PTX declares (`.global` variables: their size,
 * and their initialiser of numbers and `generic(symbol)`s), one allocation per module
 * and name; a name the PTX does not declare is not found. With FAKE_CUDA_RUN_PROBES=1 a
 * launch of a probed function acts out tests/trace/shared_maps.bpf.c's probes on those
 * maps, reaching them as the rebinding lowering does, and tests/trace/printk.bpf.c's
 * (a printk record, a loop-budget count) (run_probes below).
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
typedef unsigned long long u64;
struct image { int id; int probed; int library; int device; char *text; };
struct func { struct image *owner; char name[256]; int kernel; };

static int next_id;
/* The calling thread's current context: 1 (device 0) or 2 (device 1). */
static __thread size_t current_ctx = 1;

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

/* fake_capture(1) ... fake_capture(0) (the app's mode `captured`): the application's
 * streams are capturing a graph in global mode
 * (cudart's default), as a real driver sees them while cudaStreamBeginCapture runs: a
 * call on the legacy stream (the synchronous memset and copies, cuCtxSynchronize) is
 * refused with 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT), an unsafe one (cuMemAlloc)
 * from a thread not in relaxed mode with 900, and either invalidates the capture: every
 * later launch fails with 901. The interposer's own stream (0x5) does not capture. */
static int capture_invalidated;
static __thread int capture_mode; /* 0 global, 1 thread-local, 2 relaxed */
static int capture_on;
void fake_capture(int on) { capture_on = on; say("capture %s", on ? "begins" : "ends"); }
static int capturing(void) { return capture_on; }
static CUresult legacy(const char *what) {
	if (!capturing()) return 0;
	capture_invalidated = 1;
	say("capture invalidated by %s", what);
	return 906;
}
static CUresult unsafe_call(const char *what) {
	if (!capturing() || capture_mode == 2) return 0;
	capture_invalidated = 1;
	say("capture invalidated by %s", what);
	return 900;
}
CUresult cuThreadExchangeStreamCaptureMode(int *mode) {
	int old = capture_mode;
	capture_mode = *mode;
	*mode = old;
	return 0;
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
	m->device = (int)current_ctx - 1;
	m->text = text ? strdup(text) : NULL;
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

static CUresult global(u64 *addr, size_t *size, void *m, const char *name);
static void run_probes(struct image *m, unsigned threads);

static CUresult launch(const char *how, void *fp, unsigned threads) {
	struct func *f = fp;
	say("launch %s %s module=%d device=%d probed=%d", how, f->name, f->owner->id,
	    f->owner->library ? (int)current_ctx - 1 : f->owner->device, f->owner->probed);
	if (f->owner->probed && getenv("FAKE_CUDA_RUN_PROBES"))
		run_probes(f->owner, threads);
	return 0;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			unsigned by, unsigned bz, unsigned sh, void *s, void **p, void **x) {
	(void)sh; (void)s; (void)x;
	if (capture_invalidated) return 901;
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
	return launch("legacy", f, gx * gy * gz * bx * by * bz);
}
CUresult cuLaunchKernel_ptsz(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			     unsigned by, unsigned bz, unsigned sh, void *s, void **p, void **x) {
	(void)sh; (void)s; (void)p; (void)x;
	return launch("ptsz", f, gx * gy * gz * bx * by * bz);
}

/* Module globals, as the module's PTX declares them: `.visible .global [.align N] .TYPE
 * NAME[[COUNT]] [= INIT];` with INIT a number, `generic(SYMBOL)` or a `{...}` list of
 * them. Device pointers are host pointers. */
static size_t type_bytes(const char *t) {
	if (!strncmp(t, ".b8", 3) || !strncmp(t, ".u8", 3) || !strncmp(t, ".s8", 3)) return 1;
	if (!strncmp(t, ".b16", 4) || !strncmp(t, ".u16", 4)) return 2;
	if (!strncmp(t, ".b32", 4) || !strncmp(t, ".u32", 4) || !strncmp(t, ".s32", 4)) return 4;
	return 8;
}

/* The declaration of `name` in `text`: the start of its line, or NULL. */
static const char *declaration(const char *text, const char *name) {
	size_t n = strlen(name);
	for (const char *p = text; p && (p = strstr(p, name)); p += n) {
		char after = p[n];
		if (p > text && (p[-1] == ' ' || p[-1] == '\t') &&
		    (after == '[' || after == ' ' || after == ';' || after == '=')) {
			const char *line = p;
			while (line > text && line[-1] != '\n') line--;
			const char *g = strstr(line, ".global");
			const char *c = strstr(line, ".const");
			if ((g && g < p) || (c && c < p)) return line;
		}
	}
	return NULL;
}

static CUresult global(u64 *addr, size_t *size, void *mp, const char *name) {
	static struct { void *m; size_t ctx; char name[128]; unsigned char *b; size_t n; } seen[1024];
	static int count;
	struct image *m = mp;
	size_t ctx = m && m->library ? current_ctx : 0;
	for (int i = 0; i < count; i++)
		if (seen[i].m == m && seen[i].ctx == ctx && !strcmp(seen[i].name, name)) {
			*addr = (u64)(size_t)seen[i].b;
			*size = seen[i].n;
			return 0;
		}
	const char *line = m && m->text ? declaration(m->text, name) : NULL;
	if (!line || count == 1024) return 500; /* CUDA_ERROR_NOT_FOUND */
	const char *p = strstr(line, name);
	/* The element type: the last `.b8`/`.u64`/... word before the name. */
	size_t el = 8;
	for (const char *t = line; t < p; t++)
		if (*t == '.' && (t[1] == 'b' || t[1] == 'u' || t[1] == 's') && t[2] >= '0' && t[2] <= '9')
			el = type_bytes(t);
	size_t elems = p[strlen(name)] == '[' ? strtoull(p + strlen(name) + 1, NULL, 10) : 1;
	size_t n = el * (elems ? elems : 1);
	unsigned char *b = calloc(1, n < 8 ? 8 : n);
	seen[count].m = m;
	seen[count].ctx = ctx;
	snprintf(seen[count].name, sizeof seen[count].name, "%s", name);
	seen[count].b = b;
	seen[count++].n = n;
	*addr = (u64)(size_t)b;
	*size = n;
	const char *eq = strchr(p, '=');
	const char *end = strchr(p, ';');
	if (eq && end && eq < end) {
		const char *q = eq + 1;
		for (size_t k = 0; q < end && k < elems; k++) {
			while (*q == ' ' || *q == '{') q++;
			u64 v = 0;
			if (!strncmp(q, "generic(", 8)) {
				char sym[128];
				size_t j = 0;
				for (q += 8; *q != ')' && j < sizeof sym - 1; q++) sym[j++] = *q;
				sym[j] = 0;
				size_t ignored;
				if (global(&v, &ignored, m, sym)) v = 0;
				q++;
			} else {
				v = strtoull(q, (char **)&q, 0);
			}
			memcpy(b + k * el, &v, el);
			while (*q == ' ' || *q == '}') q++;
			if (*q == ',') q++;
		}
	}
	return 0;
}

/* The u64 words of module global `name`, or NULL. */
static u64 *words(struct image *m, const char *name) {
	u64 at;
	size_t n;
	return global(&at, &n, m, name) ? NULL : (u64 *)(size_t)at;
}

static u64 r8(u64 n) { return (n + 7) & ~7ull; }

/* tests/trace/printk.bpf.c's probe, for one launch (the launch's number `n`): one
 * trace_printk record, `hello %d` with n, in the module's printk ring (bpf2ptx_printk:
 * words 3-5), its format found in the module's read-only global data; and 3 runs ended
 * by the loop budget (bpf2ptx_loopcnt_on_entry). */
static void printk_probe(struct image *m, u64 n) {
	u64 *d = words(m, "bpf2ptx_printk"), *cnt = words(m, "bpf2ptx_loopcnt_on_entry");
	if (cnt) *cnt += 3;
	if (!d || !d[3] || !d[5] || !m->text) return;
	/* The read-only section: a global whose name has "rodata" in it. */
	const char *p = m->text, *fmt = NULL;
	while (!fmt && (p = strstr(p, "bpf2ptx_map_"))) {
		char name[128];
		size_t j = 0;
		while (j < sizeof name - 1 && p[j] && p[j] != '[' && p[j] != ' ' && p[j] != ';')
			name[j] = p[j], j++;
		name[j] = 0;
		u64 at;
		size_t size;
		p += j;
		if (!strstr(name, "rodata") || global(&at, &size, m, name)) continue;
		for (size_t k = 0; k + 5 <= size && !fmt; k++)
			if (!memcmp((char *)(size_t)at + k, "hello", 5)) fmt = (char *)(size_t)at + k;
	}
	if (!fmt) return;
	u64 *ctr = (u64 *)(size_t)d[5];
	unsigned char *rec = (unsigned char *)(size_t)(d[3] + (ctr[0] & (d[4] - 1)));
	u64 w[6] = { 0, (u64)(size_t)fmt, strlen(fmt) + 1, n, 0, 0 };
	unsigned len = sizeof w;
	memcpy(rec + 8, w, sizeof w);
	memcpy(rec, &len, 4);
	memset(rec + 4, 0, 4);
	ctr[0] += 8 + sizeof w;
}

/* tests/trace/shared_maps.bpf.c's probes, for one launch of `threads` threads of module
 * `m`, on its maps where its descriptors and reference words say they are (what
 * ptx::Options::rebind_maps lowers to): `hits` +1 at key 0 (its address word, `.const`); `per_thr` +1 at key
 * 0 in each thread's slot below the units bound (words 3 and 4); `seen` one new key, the
 * launch's number in the process, unless the shared count (word 5) says the map holds
 * max_entries keys (then `full` in shard 0), in the runtime's slot layout; `records` one
 * 8-byte record, the launch's number (the ring's descriptor through its reference word;
 * producer and bound moved); `.bss` +1 (through its reference word). */
static void run_probes(struct image *m, unsigned threads) {
	static u64 launches;
	u64 n = ++launches, *d, *r;
	if ((r = words(m, "bpf2ptx_mapaddr_hits")) && *r)
		*(u64 *)(size_t)*r += 1;
	if ((d = words(m, "bpf2ptx_map_per_thr")) && d[3])
		for (u64 t = 0; t < threads && t < d[4]; t++)
			*(u64 *)(size_t)(d[3] + t * (d[2] >> 32)) += 1;
	if ((d = words(m, "bpf2ptx_map_seen")) && d[3] && d[5]) {
		u64 *count = (u64 *)(size_t)d[5], max = d[2] & 0xffffffff;
		u64 slot = 8 + r8(d[1] & 0xffffffff) + (d[2] >> 32);
		if (*count >= max) {
			*(u64 *)(size_t)(d[5] + 128) += 1;
		} else {
			*count += 1;
			for (u64 i = n & (d[4] - 1);; i = (i + 1) & (d[4] - 1)) {
				unsigned char *s = (unsigned char *)(size_t)(d[3] + i * slot);
				if (*(unsigned *)s == 0) {
					*(unsigned *)s = 2;
					memcpy(s + 8, &n, 8);
					*(u64 *)(s + 8 + r8(d[1] & 0xffffffff)) = 1;
					break;
				}
			}
		}
	}
	if ((r = words(m, "bpf2ptx_mapref_records")) && *r) {
		d = (u64 *)(size_t)*r;
		u64 *ctr = (u64 *)(size_t)d[5];
		unsigned char *rec = (unsigned char *)(size_t)(d[3] + (ctr[0] & (d[4] - 1)));
		unsigned len = 8;
		memcpy(rec + 8, &n, 8);
		memcpy(rec, &len, 4);
		memset(rec + 4, 0, 4);
		ctr[0] += 16;
		d[7] = ctr[0];
	}
	if ((r = words(m, "bpf2ptx_mapref_bss")) && *r)
		*(u64 *)(size_t)*r += 1;
	printk_probe(m, n);
}
CUresult cuModuleGetGlobal_v2(u64 *a, size_t *n, void *m, const char *name) {
	return global(a, n, m, name);
}
CUresult cuLibraryGetGlobal(u64 *a, size_t *n, void *l, const char *name) {
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
	if (unsafe_call("cuMemAlloc")) return 900;
	*p = (unsigned long long)(size_t)malloc(n);
	say("alloc %zu", n);
	return 0;
}
CUresult cuMemFree_v2(unsigned long long p) { free((void *)(size_t)p); say("free"); return 0; }
CUresult cuMemsetD8Async(unsigned long long p, unsigned char v, size_t n, void *s) {
	(void)s;
	memset((void *)(size_t)p, v, n);
	return 0;
}
CUresult cuMemcpyDtoDAsync_v2(unsigned long long d, unsigned long long s, size_t n, void *st) {
	(void)st;
	memcpy((void *)(size_t)d, (void *)(size_t)s, n);
	say("dtod %zu", n);
	return 0;
}
CUresult cuMemcpyHtoDAsync_v2(unsigned long long d, const void *s, size_t n, void *st) {
	(void)st;
	memcpy((void *)(size_t)d, s, n);
	say("htod %zu", n);
	return 0;
}
CUresult cuMemsetD8_v2(unsigned long long p, unsigned char v, size_t n) {
	if (legacy("cuMemsetD8")) return 906;
	memset((void *)(size_t)p, v, n);
	return 0;
}
CUresult cuMemcpyDtoD_v2(unsigned long long d, unsigned long long s, size_t n) {
	if (legacy("cuMemcpyDtoD")) return 906;
	memcpy((void *)(size_t)d, (void *)(size_t)s, n);
	say("dtod %zu", n);
	return 0;
}
CUresult cuMemcpyHtoD_v2(unsigned long long d, const void *s, size_t n) {
	if (legacy("cuMemcpyHtoD")) return 906;
	memcpy((void *)(size_t)d, s, n);
	say("htod %zu", n);
	return 0;
}
CUresult cuMemcpyDtoH_v2(void *d, unsigned long long s, size_t n) {
	if (legacy("cuMemcpyDtoH")) return 906;
	memcpy(d, (void *)(size_t)s, n);
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
CUresult cuCtxGetDevice(int *d) { *d = (int)current_ctx - 1; return 0; }
/* Compute capability 9.x; 64-bit stream memory operations (122) supported. */
CUresult cuDeviceGetAttribute(int *v, int attr, int d) { (void)d; *v = attr == 75 ? 9 : attr == 122; return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 13000; return 0; }
CUresult cuCtxGetCurrent(void **c) { *c = (void *)current_ctx; return 0; }
CUresult cuCtxSetCurrent(void *c) {
	if ((size_t)c != 1 && (size_t)c != 2) return 201; /* CUDA_ERROR_INVALID_CONTEXT */
	current_ctx = (size_t)c;
	return 0;
}
CUresult cuCtxSynchronize(void) {
	if (legacy("cuCtxSynchronize")) return 906;
	say("synchronize");
	return 0;
}
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
/* A stream-ordered write: done at once (the fake's streams are synchronous). */
CUresult cuStreamWriteValue64_v2(void *s, unsigned long long at, unsigned long long v,
				 unsigned flags) {
	(void)s; (void)flags;
	*(unsigned long long *)(size_t)at = v;
	say("write value %llu", v);
	return 0;
}
CUresult cuStreamIsCapturing(void *s, int *status) {
	*status = capturing() && s != (void *)0x5;
	return 0;
}

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
	return launch("graph", p->func ? p->func : p->kern,
		      p->grid[0] * p->grid[1] * p->grid[2] * p->block[0] * p->block[1] * p->block[2]);
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
	{ "cuMemcpyHtoD", (void *)cuMemcpyHtoD_v2 }, { "cuMemcpyDtoH", (void *)cuMemcpyDtoH_v2 },
	ENTRY(cuMemsetD8Async), { "cuMemcpyDtoDAsync", (void *)cuMemcpyDtoDAsync_v2 },
	{ "cuMemcpyHtoDAsync", (void *)cuMemcpyHtoDAsync_v2 },
	ENTRY(cuThreadExchangeStreamCaptureMode),
	{ "cuLinkCreate", (void *)cuLinkCreate_v2 }, { "cuLinkAddData", (void *)cuLinkAddData_v2 },
	ENTRY(cuLinkComplete), ENTRY(cuLinkDestroy), ENTRY(cuCtxGetDevice),
	ENTRY(cuDeviceGetAttribute), ENTRY(cuDriverGetVersion),
	{ "cuGraphAddKernelNode", (void *)cuGraphAddKernelNode_v2 },
	ENTRY(cuMemHostAlloc), { "cuMemHostGetDevicePointer", (void *)cuMemHostGetDevicePointer_v2 },
	ENTRY(cuStreamQuery), ENTRY(cuStreamIsCapturing),
	{ "cuStreamWriteValue64", (void *)cuStreamWriteValue64_v2 },
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
