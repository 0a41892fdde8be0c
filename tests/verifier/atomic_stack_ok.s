# atomic-region, accepted: atomics on an initialised stack slot (add, fetch-add, xchg, cmpxchg).
r1 = 0
*(u64 *)(r10 - 8) = r1
r1 = 1
lock *(u64 *)(r10 - 8) += r1
r1 = atomic_fetch_add((u64 *)(r10 - 8), r1)
r1 = xchg_64(r10 - 8, r1)
r0 = 2
r0 = cmpxchg_64(r10 - 8, r0, r1)
exit
