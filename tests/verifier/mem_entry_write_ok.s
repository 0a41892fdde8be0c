# mem-bounds, accepted: conformance memory is writable.
# entry: mem 8
*(u64 *)(r1 + 0) = 7
r0 = *(u64 *)(r1 + 0)
exit
