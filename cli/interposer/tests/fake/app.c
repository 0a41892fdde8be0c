/* SPDX-License-Identifier: MIT OR Apache-2.0 */
/* A CUDA application in miniature, for the interposer's tests: loads the PTX file argv[2]
 * and launches every kernel named after it twice (1 block of 32 threads, then 2 blocks),
 * reaching the driver the way argv[1]
 * says:
 *   linked    calls linked against libcuda (as CuPy and hand-written driver code do);
 *   procaddr  dlopen("libcuda.so.1") + dlsym("cuGetProcAddress_v2"), then every entry
 *             point from it with the per-thread default stream (as nvcc's static cudart);
 *   link      linked, the PTX through cuLinkAddData and the linked cubin loaded (as
 *             JITs such as Numba hand PTX over);
 *   graph     linked, each kernel added to a graph as an explicit kernel node, twice;
 *   crash     linked, then a segmentation fault after the launches;
 *   library   linked, through cuLibraryLoadData / cuLibraryGetKernel, launching the
 *             CUkernel itself and its cuKernelGetFunction (as cudart's lazy loading);
 *   bench     linked, the first kernel launched FAKE_APP_LAUNCHES times (default
 *             100000) after one warm-up launch; prints the mean ns per launch call;
 *   twomod    linked, the PTX loaded as two modules; three rounds r (0, 1, 2), each
 *             launching every kernel of module 0, then of module 1, module k's with
 *             k + r + 1 blocks of 32 threads;
 *   twodev    as twomod, module 1 loaded and launched on device 1 (context 0x2 made
 *             current), module 0 on device 0;
 *   twodevlib linked, the PTX loaded once as a library; three rounds r, each launching
 *             every kernel's CUkernel on device 0 (r + 1 blocks of 32 threads), then on
 *             device 1 (r + 2 blocks; in the last round through the kernel's
 *             cuKernelGetFunction in context 0x2), as cudart's lazy loading runs one
 *             kernel on several devices. */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int CUresult;
typedef CUresult (*load_t)(void **, const void *);
typedef CUresult (*getf_t)(void **, void *, const char *);
typedef CUresult (*launch_t)(void *, unsigned, unsigned, unsigned, unsigned, unsigned,
			     unsigned, unsigned, void *, void **, void **);
typedef CUresult (*gpa_t)(const char *, void **, int, unsigned long long, int *);

CUresult cuModuleLoadData(void **, const void *);
CUresult cuModuleGetFunction(void **, void *, const char *);
CUresult cuLaunchKernel(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			unsigned, void *, void **, void **);
CUresult cuLibraryLoadData(void **, const void *, int *, void **, unsigned, int *, void **,
			   unsigned);
CUresult cuLibraryGetKernel(void **, void *, const char *);
CUresult cuKernelGetFunction(void **, void *);
CUresult cuLinkCreate_v2(unsigned, int *, void **, void **);
CUresult cuLinkAddData_v2(void *, unsigned, void *, size_t, const char *, unsigned, int *, void **);
CUresult cuLinkComplete(void *, void **, size_t *);
struct node_params {
	void *func;
	unsigned grid[3], block[3], shared;
	void **params, **extra;
	void *kern, *ctx;
};
CUresult cuGraphAddKernelNode_v2(void **, void *, const void **, size_t, const struct node_params *);
CUresult cuCtxSetCurrent(void *);
void fake_capture(int on);

static char *slurp(const char *path) {
	FILE *f = fopen(path, "rb");
	if (!f) { perror(path); exit(2); }
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *s = malloc(n + 1);
	if (fread(s, 1, n, f) != (size_t)n) exit(2);
	s[n] = 0;
	fclose(f);
	return s;
}

static void check(CUresult rc, const char *what) {
	if (rc) { fprintf(stderr, "%s: %d\n", what, rc); exit(1); }
}

int main(int argc, char **argv) {
	if (argc < 4) { fprintf(stderr, "usage: app MODE PTX KERNEL...\n"); return 2; }
	char *ptx = slurp(argv[2]);
	load_t load = cuModuleLoadData;
	getf_t getf = cuModuleGetFunction;
	launch_t launch = cuLaunchKernel;
	/* fork, forkcrash: a process tree, as torchrun's workers: the app forks before any
	 * driver call, and both launch each kernel, the parent twice and the child three
	 * times; the parent waits for the child. forkcrash: the child dies of SIGSEGV
	 * after its launches (and a pause for a periodic snapshot). forkwait: the parent
	 * pauses after the child ended, so periodic rounds print the child's final snapshot
	 * before trace's last print shows it again. */
	int runs = 2;
	pid_t forked = -1;
	if (!strncmp(argv[1], "fork", 4)) {
		fflush(stdout);
		forked = fork();
		if (forked < 0) { perror("fork"); return 2; }
		if (forked == 0) runs = 3;
	}
	if (!strcmp(argv[1], "procaddr")) {
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
		gpa_t gpa = (gpa_t)dlsym(h, "cuGetProcAddress_v2");
		check(!gpa, "dlsym cuGetProcAddress_v2");
		check(gpa("cuModuleLoadData", (void **)&load, 12000, 2, NULL), "gpa load");
		check(gpa("cuModuleGetFunction", (void **)&getf, 12000, 2, NULL), "gpa getf");
		check(gpa("cuLaunchKernel", (void **)&launch, 12000, 2, NULL), "gpa launch");
	}
	if (!strcmp(argv[1], "twodevlib")) {
		void *lib;
		check(cuLibraryLoadData(&lib, ptx, 0, 0, 0, 0, 0, 0), "library load");
		for (int r = 0; r < 3; r++)
			for (int d = 0; d < 2; d++) {
				check(cuCtxSetCurrent((void *)(size_t)(d + 1)), "set context");
				for (int i = 3; i < argc; i++) {
					void *k, *f;
					check(cuLibraryGetKernel(&k, lib, argv[i]), "get kernel");
					if (d == 1 && r == 2) {
						check(cuKernelGetFunction(&f, k), "kernel function");
						k = f;
					}
					check(cuLaunchKernel(k, d + r + 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "launch");
				}
			}
		check(cuCtxSetCurrent((void *)1), "set context");
		printf("app done\n");
		return 0;
	}
	if (!strcmp(argv[1], "library")) {
		void *lib;
		check(cuLibraryLoadData(&lib, ptx, 0, 0, 0, 0, 0, 0), "library load");
		for (int i = 3; i < argc; i++) {
			void *k, *f;
			check(cuLibraryGetKernel(&k, lib, argv[i]), "get kernel");
			check(cuKernelGetFunction(&f, k), "kernel function");
			for (int r = 0; r < 2; r++) {
				check(cuLaunchKernel(k, r + 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "launch kernel");
				check(cuLaunchKernel(f, r + 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "launch function");
			}
		}
		return 0;
	}
	if (!strcmp(argv[1], "twomod") || !strcmp(argv[1], "twodev")) {
		int two = !strcmp(argv[1], "twodev");
		void *mods[2];
		for (int k = 0; k < 2; k++) {
			if (two) check(cuCtxSetCurrent((void *)(size_t)(k + 1)), "set context");
			check(load(&mods[k], ptx), "load");
		}
		for (int r = 0; r < 3; r++)
			for (int k = 0; k < 2; k++) {
				if (two) check(cuCtxSetCurrent((void *)(size_t)(k + 1)), "set context");
				for (int i = 3; i < argc; i++) {
					void *f;
					check(getf(&f, mods[k], argv[i]), "get function");
					check(launch(f, k + r + 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "launch");
				}
			}
		if (two) check(cuCtxSetCurrent((void *)1), "set context");
		printf("app done\n");
		return 0;
	}
	void *m;
	if (!strcmp(argv[1], "link")) {
		void *state, *cubin;
		size_t size;
		check(cuLinkCreate_v2(0, 0, 0, &state), "link create");
		check(cuLinkAddData_v2(state, 1, ptx, strlen(ptx) + 1, "app.ptx", 0, 0, 0), "link add");
		check(cuLinkComplete(state, &cubin, &size), "link complete");
		ptx = cubin;
	}
	check(load(&m, ptx), "load");
	if (!strcmp(argv[1], "graph")) {
		for (int i = 3; i < argc; i++) {
			void *f, *node;
			check(getf(&f, m, argv[i]), "get function");
			for (int r = 0; r < 2; r++) {
				struct node_params p = { f, { r + 1, 1, 1 }, { 32, 1, 1 }, 0, 0, 0, 0, 0 };
				check(cuGraphAddKernelNode_v2(&node, (void *)0x1, 0, 0, &p), "graph node");
			}
		}
		return 0;
	}
	if (!strcmp(argv[1], "bench")) {
		void *f;
		const char *n = getenv("FAKE_APP_LAUNCHES");
		long count = n ? atol(n) : 100000;
		struct timespec a, b;
		check(getf(&f, m, argv[3]), "get function");
		check(launch(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "warm-up launch");
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long r = 0; r < count; r++)
			check(launch(f, 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "launch");
		clock_gettime(CLOCK_MONOTONIC, &b);
		printf("%.1f ns per launch\n",
		       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / count);
		return 0;
	}
	/* captured: the launches (the first of each kernel included) come while the
	 * application's streams capture a graph (the stand-in driver's fake_capture). */
	int captured = !strcmp(argv[1], "captured");
	if (captured) fake_capture(1);
	for (int i = 3; i < argc; i++) {
		void *f;
		check(getf(&f, m, argv[i]), "get function");
		for (int r = 0; r < runs; r++)
			check(launch(f, r + 1, 1, 1, 32, 1, 1, 0, 0, 0, 0), "launch");
	}
	if (captured) fake_capture(0);
	if (forked == 0) {
		if (!strcmp(argv[1], "forkcrash")) {
			usleep(300 * 1000);
			raise(SIGSEGV);
		}
		return 0;
	}
	if (forked > 0) {
		int st;
		if (waitpid(forked, &st, 0) != forked) { perror("waitpid"); return 1; }
		printf("child %s\n", WIFEXITED(st) && !WEXITSTATUS(st) ? "done" : "failed");
		if (!strcmp(argv[1], "forkwait"))
			usleep(300 * 1000);
	}
	printf("app done\n");
	fflush(stdout);
	if (!strcmp(argv[1], "crash"))
		raise(SIGSEGV);
	return 0;
}
