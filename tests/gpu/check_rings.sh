B=${BPF2PTX:-./target/release/bpf2ptx}
OUT=${OUT:-/tmp}
for f in globals.v4 gpu_maps.v3 perf_event.v1 ringbuf.v2 signed_ops.v4; do
  echo "== $f"
  timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 $B run tests/corpus/obj/$f.o --target sm_90 --grid 2 --block 64 --maps > $OUT/ring_$f.txt 2>&1
  echo "rc=$? $(grep -E 'ERROR SUMMARY|^r0|printk' $OUT/ring_$f.txt | head -5 | tr '\n' ' ')"
  python3 - $OUT/ring_$f.txt <<'PY'
import json,sys
t=open(sys.argv[1]).read()
s=t[t.index('['):t.rindex(']')+1] if '[' in t else '[]'
try:
    maps=json.loads(s)
except Exception as e:
    print("  json:", e); sys.exit(0)
for m in maps:
    if "records" in m: print("  ", m["name"], m["type"], "records", len(m["records"]), "drops", m.get("drops"), "producer", m.get("producer"))
PY
done
for f in ringbuf.v2 perf_event.v1; do $B run tests/corpus/obj/$f.o --target sm_90 --grid 4096 --block 256 --maps > $OUT/big_$f.txt 2>&1; echo "$f 1M: $(head -1 $OUT/big_$f.txt)"; python3 -c "
import json,sys
t=open('$OUT/big_$f.txt').read(); m=json.loads(t[t.index('['):t.rindex(']')+1])
for x in m:
    if 'records' in x: print('  ', x['name'], 'records', len(x['records']), 'drops', x['drops'], 'records+drops', len(x['records'])+x['drops'])
"; done
