# GPU harness of the ring reservation: N threads each reserve one record on a ring, write
# it, submit; the host decodes the ring and checks records + drops == attempts.
# usage (GPU machine, repo root): python3 tests/gpu/ring_stress.py [MODULE.ptx] LABEL
# (exit 1 if a case fails; ONLY_PTX=1 only writes /tmp/stress_LABEL.ptx). The ring
# functions come from a module the compiler emitted: by default the golden
# tests/out/ptx/corpus/ringbuf.v2.o.ptx, which `cargo test --test golden_ptx` keeps equal
# to what the compiler writes (its bpf2ptx_ringbuf_* and bpf2ptx_copy text, with every ABI
# placeholder filled), so this harness tests the runtime as it ships.
import re, sys, time, struct, os
if not os.environ.get("ONLY_PTX"):
    import numpy as np, cupy as cp

GOLDEN = "tests/out/ptx/corpus/ringbuf.v2.o.ptx"
args = [a for a in sys.argv[1:]]
module = args.pop(0) if len(args) > 1 and args[0].endswith(".ptx") else GOLDEN
label = args[0] if args else "golden"
src = open(module).read()
RUNTIME = re.compile(r"bpf2ptx_(ringbuf_\w+|copy)\(")


def runtime_funcs(text):
    """The prototypes and the definitions of the ring functions and the copy in `text`."""
    decls, defs = [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith(".func") and RUNTIME.search(line):
            if line.rstrip().endswith(";"):
                decls.append(line)
            else:
                j = i
                while lines[j] != "}":
                    j += 1
                defs.append("\n".join(lines[i:j + 1]))
                i = j
        i += 1
    if not defs:
        sys.exit(f"{module}: no bpf2ptx_ringbuf_* definitions")
    return "\n".join(decls) + "\n\n", "\n\n".join(defs) + "\n\n"


decls, funcs = runtime_funcs(src)
copy = ""  # the copy is among the definitions taken from the module
KERNEL = r"""
.visible .entry stress(.param .u64 desc, .param .u64 mode)
{
	.reg .pred %p<4>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<16>;
	ld.param.u64 %rd1, [desc];
	ld.param.u64 %rd2, [mode];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mad.wide.u32 %rd3, %r1, %r2, 0;
	cvt.u64.u32 %rd4, %r3;
	add.s64 %rd3, %rd3, %rd4;          // tid
	// size: mode 0: 16; mode 1: 8 * (1 + tid % 4)
	and.b64 %rd5, %rd3, 3;
	add.s64 %rd5, %rd5, 1;
	shl.b64 %rd5, %rd5, 3;
	setp.eq.u64 %p1, %rd2, 0;
	selp.b64 %rd5, 16, %rd5, %p1;
	{
	.param .b64 a0;
	.param .b64 a1;
	.param .b64 a2;
	.param .b64 r;
	st.param.b64 [a0], %rd1;
	st.param.b64 [a1], %rd5;
	st.param.b64 [a2], 0;
	call (r), bpf2ptx_ringbuf_reserve, (a0, a1, a2);
	ld.param.b64 %rd6, [r];
	}
	setp.eq.u64 %p2, %rd6, 0;
	@%p2 bra $Lend;
	mov.u64 %rd7, 0;
	shl.b64 %rd8, %rd3, 4;
$Lw:
	add.s64 %rd9, %rd8, %rd7;
	shl.b64 %rd10, %rd7, 3;
	add.s64 %rd10, %rd6, %rd10;
	st.u64 [%rd10], %rd9;
	add.s64 %rd7, %rd7, 1;
	shl.b64 %rd11, %rd7, 3;
	setp.lt.u64 %p3, %rd11, %rd5;
	@%p3 bra $Lw;
	{
	.param .b64 a0;
	.param .b64 a1;
	st.param.b64 [a0], %rd6;
	st.param.b64 [a1], 0;
	call bpf2ptx_ringbuf_submit, (a0, a1);
	}
$Lend:
	ret;
}
"""
ptx = ".version 7.8\n.target sm_90\n.address_size 64\n\n" + decls + copy + funcs + KERNEL
open('/tmp/stress_%s.ptx' % label, 'w').write(ptx)
if os.environ.get('ONLY_PTX'):
    sys.exit(0)
mod = cp.RawModule(path='/tmp/stress_%s.ptx' % label)
kern = mod.get_function('stress')

def decode(ring, prod, cons):
    size = len(ring)
    recs = []
    pos = cons
    while pos < prod:
        off = pos % size
        ln, fl = struct.unpack_from('<II', ring, off)
        if fl & 0x80000000 or (ln == 0 and fl == 0):
            break
        assert fl & ~0x40000000 == 0, ('flags', pos, fl)
        tot = 8 + ((ln + 7) & ~7)
        assert off + tot <= size, ('wraps', pos, ln)
        assert tot <= prod - pos, ('past', pos, ln)
        if fl == 0:
            recs.append((pos, ring[off + 8: off + 8 + ln]))
        pos += tot
    return recs, pos

GRID, BLOCK = 4096, 256
N = GRID * BLOCK
failed = 0
for ring_bytes, mode, start in [(65536, 0, 0), (32 << 20, 0, 0), (65536, 1, 3 * 65536 - 1000),
                                (32 << 20, 1, (32 << 20) - 4088), (32 << 20, 1, 0)]:
    ring = cp.zeros(ring_bytes, dtype=cp.uint8)
    ctr = cp.asarray(np.array([start, start], dtype=np.uint64))
    # Word 7, the bound, starts at the producer (specs/abi.md).
    desc = cp.asarray(np.array([27, 0, 0, ring.data.ptr, ring_bytes, ctr.data.ptr, 0, start], dtype=np.uint64))
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    kern((GRID,), (BLOCK,), (desc, np.uint64(mode)))
    cp.cuda.Device().synchronize()
    dt = time.perf_counter() - t0
    d = desc.get(); c = ctr.get(); rb = ring.get().tobytes()
    prod, cons = int(c[0]), int(c[1])
    recs, stop = decode(rb, prod, cons)
    drops = int(d[6])
    ids = []
    bad = 0
    for pos, data in recs:
        w = np.frombuffer(data, dtype=np.uint64)
        tid = int(w[0]) >> 4
        exp = 16 if mode == 0 else 8 * (1 + tid % 4)
        if len(data) != exp or not all(int(w[i]) == tid * 16 + i for i in range(len(w))):
            bad += 1
        ids.append(tid)
    dup = len(ids) - len(set(ids))
    ok = (len(recs) + drops == N and dup == 0 and bad == 0 and stop == prod and int(d[7]) == prod
          and prod - cons <= ring_bytes)
    # A ring with room for every record (and a padding record at its end) keeps them all:
    # with the bound no reservation drops when everything fits.
    need = N * 24 if mode == 0 else sum(8 + 8 * (1 + t % 4) for t in range(4)) * N // 4
    if ring_bytes >= need + 64:
        ok = ok and drops == 0
    failed += not ok
    print(f"{label} ring={ring_bytes} mode={'16B' if mode == 0 else 'mixed8-32'} start={start}: "
          f"records={len(recs)} drops={drops} sum={len(recs) + drops} dup={dup} bad={bad} "
          f"used={prod - cons} pending={prod - stop} inflight={int(d[7]) - prod} kernel={dt * 1e3:.2f}ms "
          f"{'OK' if ok else 'FAIL'}", flush=True)
sys.exit(1 if failed else 0)
