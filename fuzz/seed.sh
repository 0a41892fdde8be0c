#!/bin/sh
# Fills fuzz/corpus/load (git-ignored) with seeds: the committed corpus objects, every
# bpf_conformance .data file, and a few text-assembly snippets. Run from anywhere.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
conf=${BPF_CONFORMANCE_DIR:-$root/../shared/conformance}
out=$here/corpus/load
mkdir -p "$out"
# Objects over 64 KiB (big.v*.o) would raise libFuzzer's max_len and slow every run;
# the smoke test covers them.
for f in "$root"/tests/corpus/obj/*.o; do
    [ "$(wc -c < "$f")" -le 65536 ] && cp "$f" "$out"/
done
# The odd objects: sections without function symbols, iproute2's maps, maps of maps,
# kconfig and ksym externs (tests/corpus/odd).
for f in "$root"/tests/corpus/odd/obj/*.o; do
    cp "$f" "$out"/odd-"$(basename "$f")"
done
if [ -d "$conf/tests" ]; then
    cp "$conf"/tests/*.data "$out"/
else
    echo "seed.sh: no conformance suite at $conf (set BPF_CONFORMANCE_DIR); ELF seeds only" >&2
fi
for f in "$root"/tests/bad-input/*; do
    [ -f "$f" ] && cp "$f" "$out"/bad-input-"$(basename "$f")"
done
printf 'r0 = 1\nexit\n' > "$out"/asm-kernel.s
printf 'mov %%r0, 1\nja l\nl:\ncall local f\nexit\nf:\nlddw %%r0, 0x1122334455667788\nexit\n' > "$out"/asm-conf.s
printf 'r1 = 7 ll\nif r1 s> 5 goto +1\nr0 = *(u32 *)(r1 + 4)\nlock *(u64 *)(r10 - 8) += r2\ncall pc+1\nexit\nr0 = 0\nexit\n' > "$out"/asm-mixed.s
echo "seeded $(ls "$out" | wc -l) files into $out"
