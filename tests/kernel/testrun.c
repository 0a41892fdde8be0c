// SPDX-License-Identifier: MIT
/*
 * testrun: load raw BPF instructions into the running kernel and run them once
 * through BPF_PROG_TEST_RUN. The kernel side of tests/tests/kernel_diff.rs.
 *
 *     gcc -O2 -Wall -Wextra testrun.c -lbpf -o testrun
 *     testrun [--type T] [--map SPEC]... [--load-only] [--stats] PROG.bin [MEM.bin]
 *     testrun --probe
 *
 * PROG.bin holds the program as raw little-endian 8-byte instruction slots,
 * exactly as bpf2ptx_compiler::isa::encode() writes them (no ELF, no maps,
 * no BTF). MEM.bin, optional, holds the input memory.
 *
 * T is the program type (default syscall):
 *   syscall        BPF_PROG_TYPE_SYSCALL (loaded BPF_F_SLEEPABLE, which the
 *                  kernel requires): ctx_in = MEM, r1 = the kernel's copy
 *                  of MEM (NULL when MEM is empty). This is the only type in
 *                  which r1 is the memory, as bpf_conformance means it.
 *                  The kernel does not set r2 (bpf_conformance: the length).
 *   socket_filter  data_in = MEM (at least 14 bytes); r1 = a struct __sk_buff.
 *   xdp            data_in = MEM (at least 14 bytes); r1 = a struct xdp_md.
 *   raw_tp         ctx_in = MEM (u64 arguments); r1 = the argument array.
 *   kprobe         BPF_PROG_TYPE_KPROBE: r1 = a read-only struct pt_regs. It
 *                  cannot be test-run; use it with --load-only (the verdict).
 *
 * --map TYPE:KEY:VALUE:ENTRIES:FLAGS[:HEXINIT] creates a map (numbers in
 * decimal or 0x hex) before the load; the maps, in the order given, form the
 * load's fd_array, so `ld_imm64` with src 5 (BPF_PSEUDO_MAP_IDX) or 6
 * (BPF_PSEUDO_MAP_IDX_VALUE) and imm N names the N-th --map. HEXINIT, when
 * given, is written as the value of key 0 (padded with zeros to VALUE bytes);
 * a map with BPF_F_RDONLY_PROG (0x80) is then frozen, as libbpf does for
 * .rodata. A map the kernel cannot create prints `verdict=map-failed`.
 *
 * --load-only stops after the load: it prints `verdict=accepted` instead of
 * running the program.
 *
 * --stats loads with log_level BPF_LOG_STATS (4), which makes the kernel log
 * its error (when it rejects) and its statistics but no instruction trace, so
 * the load costs what a load without a log costs plus a few lines of text
 * (benches/verifier-time.rs compares the verifiers' times with it). With the
 * verdict it also prints:
 *   wall_us=<N>                         microseconds of the bpf_prog_load() call
 *                                       (CLOCK_MONOTONIC around it)
 *   cpu_us=<N>                          CPU time of the call, user and system
 *                                       (getrusage), which other load on the
 *                                       machine does not inflate
 *   verification_us=<N>                 the kernel's "verification time N usec"
 *   processed=<N>                       the kernel's "processed N insns"
 *   states=<total>/<peak>               its "total_states N peak_states N"
 * A figure the log lacks is left out.
 *
 * Output, one `key=value` per line on stdout, exit status 0 for all three:
 *   retval=<u32>                        the program ran; the low 32 bits of r0
 *   mem=<hex>                           after retval when MEM is not empty: MEM as
 *                                       the program left it (syscall, raw_tp: the
 *                                       ctx the kernel copies back into ctx_in;
 *                                       packet types: the first bytes of data_out)
 *   verdict=accepted                    (--load-only) the verifier accepted it
 *   verdict=rejected errno=<E> reason=<last line of the verifier log>
 *   verdict=map-failed errno=<E> reason=<which map and why>
 *   verdict=run-failed errno=<E> reason=<why BPF_PROG_TEST_RUN failed>
 * The whole verifier log of a rejected program goes to stderr. Exit status 2
 * is a usage or I/O error.
 *
 * --probe loads and runs `r0 = 0; exit` as a syscall program; it exits 0 when
 * that works, else prints why bpf(2) cannot be used here and exits 1.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>

#define LOG_SIZE (1u << 22)

/* The kernel's log level for statistics only (include/linux/bpf_verifier.h; not uapi). */
#define LOG_STATS 4

static char log_buf[LOG_SIZE];

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		fprintf(stderr, "testrun: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	for (;;) {
		if (n == cap) {
			cap = cap ? cap * 2 : 4096;
			buf = realloc(buf, cap);
			if (!buf) {
				fprintf(stderr, "testrun: out of memory\n");
				exit(2);
			}
		}
		size_t got = fread(buf + n, 1, cap - n, f);

		if (got == 0)
			break;
		n += got;
	}
	if (ferror(f)) {
		fprintf(stderr, "testrun: reading %s failed\n", path);
		exit(2);
	}
	fclose(f);
	*len = n;
	return buf;
}

/* The last line of the verifier log that says why, skipping the statistics. */
static const char *last_reason(char *log)
{
	char *lines[2] = { NULL, NULL };
	char *save = NULL;

	for (char *l = strtok_r(log, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (strncmp(l, "processed ", 10) == 0 || strncmp(l, "verification time", 17) == 0 ||
		    strncmp(l, "stack depth", 11) == 0 || l[0] == 0)
			continue;
		lines[0] = lines[1];
		lines[1] = l;
	}
	return lines[1] ? lines[1] : "(empty verifier log)";
}

/* Prints `key=N` for the number that follows `label` in the log, if it is there. */
static void print_figure(const char *log, const char *label, const char *key)
{
	const char *at = strstr(log, label);
	unsigned long long n;

	if (at && sscanf(at + strlen(label), "%llu", &n) == 1)
		printf("%s=%llu\n", key, n);
}

/* The --stats lines (see the top comment); `log` is left as it was. */
static void print_stats(const char *log, uint64_t wall_ns, uint64_t cpu_us)
{
	const char *at = strstr(log, "total_states ");
	unsigned long long total, peak;

	printf("wall_us=%llu\n", (unsigned long long)(wall_ns / 1000));
	printf("cpu_us=%llu\n", (unsigned long long)cpu_us);
	print_figure(log, "verification time ", "verification_us");
	print_figure(log, "processed ", "processed");
	if (at && sscanf(at, "total_states %llu peak_states %llu", &total, &peak) == 2)
		printf("states=%llu/%llu\n", total, peak);
}

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* User and system CPU time of this process so far, in microseconds. */
static uint64_t cpu_now_us(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (uint64_t)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) * 1000000u +
	       (uint64_t)(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

static int probe(void)
{
	/* r0 = 0; exit */
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_test_run_opts, run);
	int fd;

	if (geteuid() != 0) {
		printf("not root (euid %u): loading BPF_PROG_TYPE_SYSCALL needs CAP_BPF+CAP_PERFMON\n",
		       geteuid());
		return 1;
	}
	LIBBPF_OPTS(bpf_prog_load_opts, load, .prog_flags = BPF_F_SLEEPABLE, .log_buf = log_buf,
		    .log_size = sizeof(log_buf));

	fd = bpf_prog_load(BPF_PROG_TYPE_SYSCALL, "probe", "GPL", insns, 2, &load);
	if (fd < 0) {
		int e = errno;

		printf("bpf(BPF_PROG_LOAD) of a syscall program refused: %s%s%s%s\n", strerror(e),
		       e == EPERM ? " (kernel.unprivileged_bpf_disabled, lockdown or a seccomp "
				    "filter; container without CAP_BPF?)" :
		       e == ENOSYS ? " (kernel built without CONFIG_BPF_SYSCALL, or seccomp)" :
		       e == EINVAL ? " (kernel too old for BPF_PROG_TYPE_SYSCALL, 5.14+?)" : "",
		       log_buf[0] ? "; verifier: " : "", log_buf[0] ? last_reason(log_buf) : "");
		return 1;
	}
	if (bpf_prog_test_run_opts(fd, &run) < 0) {
		printf("bpf(BPF_PROG_TEST_RUN) refused: %s\n", strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	if (run.retval != 0) {
		printf("BPF_PROG_TEST_RUN of `r0 = 0; exit` returned %u\n", run.retval);
		return 1;
	}
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: testrun [--type syscall|socket_filter|xdp|raw_tp|kprobe]\n"
			"               [--map TYPE:KEY:VALUE:ENTRIES:FLAGS[:HEXINIT]]... [--load-only]\n"
			"               [--stats]\n"
			"               PROG.bin [MEM.bin]\n"
			"       testrun --probe\n");
	return 2;
}

#define MAX_MAPS 64

/* Creates the map SPEC describes; returns its fd, or -1 after printing why. */
static int create_map(const char *spec, int index)
{
	unsigned long long f[5];
	const char *p = spec;
	char *end;
	int fd;

	for (int i = 0; i < 5; i++) {
		f[i] = strtoull(p, &end, 0);
		if (end == p || (i < 4 && *end != ':') || (i == 4 && *end != ':' && *end != 0)) {
			fprintf(stderr, "testrun: bad --map `%s`\n", spec);
			exit(2);
		}
		p = *end ? end + 1 : end;
	}
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = (unsigned)f[4]);
	fd = bpf_map_create((enum bpf_map_type)f[0], NULL, (unsigned)f[1], (unsigned)f[2],
			    (unsigned)f[3], &opts);
	if (fd < 0) {
		int e = errno;

		printf("verdict=map-failed\nerrno=%s\nreason=map %d (%s) cannot be created: %s\n",
		       strerror(e), index, spec, strerror(e));
		return -1;
	}
	if (*p) {
		size_t hex = strlen(p), n = (size_t)f[2];
		unsigned char *val = calloc(1, n ? n : 1);
		unsigned int key = 0;

		if (!val || hex % 2 || hex / 2 > n) {
			fprintf(stderr, "testrun: bad init data in --map `%s`\n", spec);
			exit(2);
		}
		for (size_t i = 0; i < hex / 2; i++)
			sscanf(p + 2 * i, "%2hhx", &val[i]);
		if (bpf_map_update_elem(fd, &key, val, 0) < 0) {
			int e = errno;

			printf("verdict=map-failed\nerrno=%s\nreason=map %d (%s): initial value: %s\n",
			       strerror(e), index, spec, strerror(e));
			return -1;
		}
		free(val);
	}
	if ((f[4] & BPF_F_RDONLY_PROG) && bpf_map_freeze(fd) < 0) {
		int e = errno;

		printf("verdict=map-failed\nerrno=%s\nreason=map %d (%s): freeze: %s\n",
		       strerror(e), index, spec, strerror(e));
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	enum bpf_prog_type type = BPF_PROG_TYPE_SYSCALL;
	const char *type_name = "syscall";
	LIBBPF_OPTS(bpf_prog_load_opts, load);
	LIBBPF_OPTS(bpf_test_run_opts, run);
	size_t prog_len, mem_len = 0;
	unsigned char pad[64] = { 0 };
	unsigned char *out = NULL;
	void *prog, *mem = NULL;
	int map_fds[MAX_MAPS];
	int n_maps = 0, load_only = 0, stats = 0;
	uint64_t start, cpu_start;
	int fd;

	if (argc == 2 && strcmp(argv[1], "--probe") == 0)
		return probe();
	for (;;) {
		if (argc >= 3 && strcmp(argv[1], "--type") == 0) {
			type_name = argv[2];
			if (strcmp(type_name, "syscall") == 0)
				type = BPF_PROG_TYPE_SYSCALL;
			else if (strcmp(type_name, "socket_filter") == 0)
				type = BPF_PROG_TYPE_SOCKET_FILTER;
			else if (strcmp(type_name, "xdp") == 0)
				type = BPF_PROG_TYPE_XDP;
			else if (strcmp(type_name, "raw_tp") == 0)
				type = BPF_PROG_TYPE_RAW_TRACEPOINT;
			else if (strcmp(type_name, "kprobe") == 0)
				type = BPF_PROG_TYPE_KPROBE;
			else
				return usage();
			argv += 2;
			argc -= 2;
		} else if (argc >= 3 && strcmp(argv[1], "--map") == 0) {
			if (n_maps == MAX_MAPS)
				return usage();
			map_fds[n_maps] = create_map(argv[2], n_maps);
			if (map_fds[n_maps] < 0)
				return 0;
			n_maps++;
			argv += 2;
			argc -= 2;
		} else if (argc >= 2 && strcmp(argv[1], "--load-only") == 0) {
			load_only = 1;
			argv += 1;
			argc -= 1;
		} else if (argc >= 2 && strcmp(argv[1], "--stats") == 0) {
			stats = 1;
			argv += 1;
			argc -= 1;
		} else {
			break;
		}
	}
	if (argc < 2 || argc > 3)
		return usage();
	if (n_maps)
		load.fd_array = map_fds;

	prog = read_file(argv[1], &prog_len);
	if (prog_len == 0 || prog_len % sizeof(struct bpf_insn) != 0) {
		fprintf(stderr, "testrun: %s: %zu bytes is not a whole number of 8-byte slots\n",
			argv[1], prog_len);
		return 2;
	}
	if (argc == 3)
		mem = read_file(argv[2], &mem_len);

	/*
	 * Without --stats, log only when the load fails: libbpf then retries with
	 * log_level 1. With it, one load at LOG_STATS, which libbpf does not retry.
	 */
	load.log_buf = log_buf;
	load.log_size = sizeof(log_buf);
	load.log_level = stats ? LOG_STATS : 0;
	/* The kernel loads syscall programs only as sleepable ones. */
	if (type == BPF_PROG_TYPE_SYSCALL)
		load.prog_flags = BPF_F_SLEEPABLE;
	cpu_start = cpu_now_us();
	start = now_ns();
	fd = bpf_prog_load(type, "kernel_diff", "GPL", prog, prog_len / sizeof(struct bpf_insn),
			   &load);
	if (fd < 0) {
		int e = errno;
		uint64_t wall = now_ns() - start, cpu = cpu_now_us() - cpu_start;

		fputs(log_buf, stderr);
		if (stats)
			print_stats(log_buf, wall, cpu);
		printf("verdict=rejected\nerrno=%s\nreason=%s\n", strerror(e),
		       log_buf[0] ? last_reason(log_buf) : strerror(e));
		return 0;
	}
	if (stats) {
		uint64_t wall = now_ns() - start, cpu = cpu_now_us() - cpu_start;

		print_stats(log_buf, wall, cpu);
	}
	if (load_only) {
		printf("verdict=accepted\n");
		close(fd);
		return 0;
	}

	switch (type) {
	case BPF_PROG_TYPE_SYSCALL:
	case BPF_PROG_TYPE_RAW_TRACEPOINT:
		if (mem_len) {
			run.ctx_in = mem;
			run.ctx_size_in = mem_len;
		}
		break;
	default:
		/* Packet programs need at least an Ethernet header of data. */
		if (mem_len < 14) {
			if (mem_len)
				memcpy(pad, mem, mem_len);
			run.data_in = pad;
			run.data_size_in = 14;
		} else {
			run.data_in = mem;
			run.data_size_in = mem_len;
		}
		out = calloc(1, run.data_size_in);
		if (!out) {
			fprintf(stderr, "testrun: out of memory\n");
			return 2;
		}
		run.data_out = out;
		run.data_size_out = run.data_size_in;
		break;
	}
	if (bpf_prog_test_run_opts(fd, &run) < 0) {
		int e = errno;

		printf("verdict=run-failed\nerrno=%s\nreason=BPF_PROG_TEST_RUN (%s, %zu bytes in): %s%s\n",
		       strerror(e), type_name, mem_len, strerror(e),
		       e == EINVAL && run.ctx_in == NULL && type == BPF_PROG_TYPE_SYSCALL ?
			       " (the program reads its ctx but MEM is empty)" :
		       e == EINVAL && type == BPF_PROG_TYPE_SYSCALL ?
			       " (MEM shorter than the program's largest ctx access?)" : "");
		close(fd);
		return 0;
	}
	close(fd);
	printf("retval=%u\n", run.retval);
	if (run.ctx_in || (out && mem_len)) {
		const unsigned char *m = out ? out : mem;

		if (out && run.data_size_out < mem_len) {
			printf("verdict=run-failed\nerrno=-\nreason=data_out has %u bytes, MEM %zu\n",
			       run.data_size_out, mem_len);
			return 0;
		}
		printf("mem=");
		for (size_t i = 0; i < mem_len; i++)
			printf("%02x", m[i]);
		printf("\n");
	}
	return 0;
}
