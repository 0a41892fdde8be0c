# SPDX-License-Identifier: MIT OR Apache-2.0
"""Relate the host's clock (time.time_ns) to the GPU's %globaltimer.

calibrate() launches a kernel that keeps writing %globaltimer into pinned,
mapped host memory while the host reads it between two reads of its own
clock. Any value g read between host times h0 and h1 satisfies
g <= gpu_time(h1), so offset = max(g - h1) over many reads is the GPU time
minus the host time, too small at most by how stale the value was when read
(the PCIe write latency plus one loop iteration, ~1 us); the spread of the
samples is returned with it.
"""
import time

import numpy as np
import cupy

_SRC = r'''
extern "C" __global__ void spin_globaltimer(volatile unsigned long long *out, volatile int *stop,
                                            unsigned long long max_ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
		*out = t;
		__threadfence_system();
	} while (!*stop && t - t0 < max_ns);
}
'''


def pinned_u64(n):
    """n u64 words of pinned host memory, as a numpy array (the device can use its address)."""
    mem = cupy.cuda.alloc_pinned_memory(8 * n)
    arr = np.frombuffer(mem, dtype=np.uint64, count=n)
    arr[:] = 0
    return mem, arr


def calibrate(samples=2000):
    """Returns (offset_ns, spread_ns): gpu_globaltimer ~= time.time_ns() + offset_ns."""
    k = cupy.RawKernel(_SRC, "spin_globaltimer")
    mem, out = pinned_u64(2)
    stop = out[1:2].view(np.int32)
    out_ptr, stop_ptr = mem.ptr, mem.ptr + 8
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        k((1,), (1,), (np.uint64(out_ptr), np.uint64(stop_ptr), np.uint64(2_000_000_000)))
    while out[0] == 0:
        pass
    best, diffs = None, []
    for _ in range(samples):
        h0 = time.time_ns()
        g = int(out[0])
        h1 = time.time_ns()
        d = g - h1
        diffs.append(d)
        best = d if best is None or d > best else best
    stop[0] = 1
    stream.synchronize()
    diffs = np.array(diffs)
    return best, int(best - np.median(diffs))
