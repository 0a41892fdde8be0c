// SPDX-License-Identifier: MIT OR Apache-2.0
/*
 * maps: print the kernel's view of every map of one BPF object file.
 *
 *     gcc -O2 -Wall maps.c -lbpf -o /tmp/bpf2ptx-maps
 *     /tmp/bpf2ptx-maps [--bpftool] obj.o
 *     /tmp/bpf2ptx-maps --version    libbpf version
 *     /tmp/bpf2ptx-maps --probe      exit 0 if bpf(2) can create a map
 *
 * Opens the object with libbpf, turns off loading of every program, turns
 * off creation of every map whose type the kernel does not know (bpftime's
 * GPU map types 1501...), loads the object (which creates the remaining
 * maps, including libbpf's global-data maps) and prints, for each created
 * map, one tab-separated line:
 *
 *     object  map  type  key_size  value_size  max_entries  map_flags  kernel_name
 *
 * `map` is the name libbpf gives the map (bpf_map__name), `kernel_name` is
 * the name the kernel stores (bpf_map_info.name); the numbers are what the
 * kernel reports in bpf_map_info. Skipped maps and objects are printed as
 * comment lines starting with '#', with the reason.
 *
 * With --bpftool, each created map is also looked up with
 * `bpftool -j map show id N` while this process still holds it, and the
 * key/value sizes, max_entries, flags and name are compared; a mismatch is
 * reported on stderr and makes the exit status 3.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static char last_msg[512];

/* Keep libbpf's last warning so a failed open/load can say why. */
static int print_fn(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	char buf[sizeof(last_msg)];
	const char *m = buf;

	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = 0;
	if (strncmp(m, "libbpf: ", 8) == 0)
		m += 8;
	if (*m)
		snprintf(last_msg, sizeof(last_msg), "%s", m);
	return 0;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Find "key": in bpftool's JSON and parse the number or string after it. */
static int json_u64(const char *json, const char *key, unsigned long long *out)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	if (!p)
		return -1;
	*out = strtoull(p + strlen(pat), NULL, 0);
	return 0;
}

static int json_str(const char *json, const char *key, char *out, size_t n)
{
	char pat[64];
	const char *p, *e;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(json, pat);
	if (!p)
		return -1;
	p += strlen(pat);
	e = strchr(p, '"');
	if (!e || (size_t)(e - p) >= n)
		return -1;
	memcpy(out, p, e - p);
	out[e - p] = 0;
	return 0;
}

/* Compare bpf_map_info with what bpftool prints for the same map id. */
static int check_bpftool(const char *obj, const struct bpf_map_info *info)
{
	char cmd[128], json[4096], name[64] = "", type[64] = "";
	const char *want_type = libbpf_bpf_map_type_str(info->type);
	unsigned long long key = 0, value = 0, entries = 0, flags = 0;
	size_t n;
	FILE *f;
	int bad = 0;

	snprintf(cmd, sizeof(cmd), "bpftool -j map show id %u 2>&1", info->id);
	f = popen(cmd, "r");
	if (!f) {
		fprintf(stderr, "bpftool-check %s %s: popen failed\n", obj, info->name);
		return -1;
	}
	n = fread(json, 1, sizeof(json) - 1, f);
	json[n] = 0;
	if (pclose(f) != 0) {
		fprintf(stderr, "bpftool-check %s %s: '%s' failed: %s\n", obj,
			info->name, cmd, json);
		return -1;
	}
	bad |= json_u64(json, "bytes_key", &key) || key != info->key_size;
	bad |= json_u64(json, "bytes_value", &value) || value != info->value_size;
	bad |= json_u64(json, "max_entries", &entries) || entries != info->max_entries;
	bad |= json_u64(json, "flags", &flags) || flags != info->map_flags;
	bad |= json_str(json, "name", name, sizeof(name)) || strcmp(name, info->name);
	bad |= json_str(json, "type", type, sizeof(type)) || !want_type ||
	       strcmp(type, want_type);
	fprintf(stderr, "bpftool-check %s id=%u %s: %s (bpftool: name=%s type=%s key=%llu value=%llu max_entries=%llu flags=%#llx)\n",
		obj, info->id, info->name, bad ? "MISMATCH" : "ok", name, type,
		key, value, entries, flags);
	return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
	int use_bpftool = 0, status = 0, err;
	const char *path, *obj_name;
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;

	if (argc == 2 && strcmp(argv[1], "--version") == 0) {
		printf("%s\n", libbpf_version_string());
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--probe") == 0) {
		int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "probe", 4, 4, 1, NULL);

		if (fd < 0) {
			printf("bpf(BPF_MAP_CREATE) refused: %s\n", strerror(errno));
			return 1;
		}
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "--bpftool") == 0) {
		use_bpftool = 1;
		argv++;
		argc--;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: %s [--bpftool] OBJ.o | --version | --probe\n",
			argv[0]);
		return 2;
	}
	path = argv[1];
	obj_name = base_name(path);
	libbpf_set_print(print_fn);

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		err = -errno;
		printf("# skip\t%s\t-\tbpf_object__open_file: %s (libbpf: %s)\n",
		       obj_name, strerror(-err), last_msg[0] ? last_msg : "-");
		return 0;
	}

	bpf_object__for_each_program(prog, obj)
		bpf_program__set_autoload(prog, false);

	bpf_object__for_each_map(map, obj) {
		unsigned int type = bpf_map__type(map);
		int ok = libbpf_probe_bpf_map_type(type, NULL);

		if (ok == 1)
			continue;
		printf("# skip\t%s\t%s\tmap type %u: %s (libbpf_probe_bpf_map_type = %d%s%s); autocreate off\n",
		       obj_name, bpf_map__name(map), type,
		       type >= 1500 ? "bpftime GPU map type, unknown to the kernel"
				    : "map type not supported by this kernel",
		       ok, ok < 0 ? ": " : "", ok < 0 ? strerror(-ok) : "");
		err = bpf_map__set_autocreate(map, false);
		if (err) {
			printf("# error\t%s\t%s\tbpf_map__set_autocreate: %s\n",
			       obj_name, bpf_map__name(map), strerror(-err));
			bpf_object__close(obj);
			return 1;
		}
	}

	last_msg[0] = 0;
	err = bpf_object__load(obj);
	if (err) {
		printf("# skip\t%s\t-\tbpf_object__load: %s (libbpf: %s)\n",
		       obj_name, strerror(-err), last_msg[0] ? last_msg : "-");
		bpf_object__close(obj);
		return 0;
	}

	bpf_object__for_each_map(map, obj) {
		struct bpf_map_info info;
		__u32 len = sizeof(info);

		if (!bpf_map__autocreate(map))
			continue;
		memset(&info, 0, sizeof(info));
		err = bpf_obj_get_info_by_fd(bpf_map__fd(map), &info, &len);
		if (err) {
			printf("# error\t%s\t%s\tbpf_obj_get_info_by_fd: %s\n",
			       obj_name, bpf_map__name(map), strerror(errno));
			status = 1;
			continue;
		}
		printf("%s\t%s\t%u\t%u\t%u\t%u\t%#x\t%s\n", obj_name,
		       bpf_map__name(map), info.type, info.key_size,
		       info.value_size, info.max_entries, info.map_flags,
		       info.name);
		if (use_bpftool && check_bpftool(obj_name, &info))
			status = 3;
	}
	bpf_object__close(obj);
	return status;
}
