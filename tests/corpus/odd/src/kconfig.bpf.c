/* Kconfig externs, one of each kind libbpf types: u32 (LINUX_KERNEL_VERSION, set by the
 * loader), int, bool, tristate, char and a char array (string); weak ones default to 0. */
#include "odd.h"

extern __u32 LINUX_KERNEL_VERSION __kconfig;
extern int CONFIG_HZ __kconfig;
extern bool CONFIG_BPF_JIT __kconfig __weak;
extern enum libbpf_tristate CONFIG_NET_SCHED __kconfig __weak;
extern char CONFIG_LOCALVERSION_CHAR __kconfig __weak;
extern char CONFIG_DEFAULT_HOSTNAME[8] __kconfig __weak;
extern unsigned long long CONFIG_NR_CPUS __kconfig __weak;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static void put(__u32 k, __u64 v)
{
	bpf_map_update_elem(&seen, &k, &v, 0);
}

SEC("gpu/entry/vecadd")
int read_kconfig(void *ctx)
{
	put(0, LINUX_KERNEL_VERSION);
	put(1, CONFIG_HZ);
	put(2, CONFIG_BPF_JIT);
	put(3, CONFIG_NET_SCHED == TRI_MODULE ? 2 : CONFIG_NET_SCHED == TRI_YES);
	put(4, CONFIG_LOCALVERSION_CHAR);
	put(5, CONFIG_DEFAULT_HOSTNAME[0]);
	put(6, CONFIG_NR_CPUS);
	return 0;
}

char __license[] SEC("license") = "GPL";
