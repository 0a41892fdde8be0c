//! The loader's unit tests: the live drainer on a host buffer, counts, host flags and
//! printk formats.

use super::{drain_until, format_printk, host_flags, LiveRing, LoaderError, RingState};
use bpf2ptx_runtime::ringbuf::{RingError, BUSY, DISCARD};

fn corpus(name: &str) -> bpf2ptx_compiler::program::Object {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    bpf2ptx_compiler::front::load_path(&root.join("tests/corpus/obj").join(name)).unwrap()
}

/// A 64-byte ring in an 8-aligned buffer, drained as the loader drains host rings.
struct Ring {
    words: Vec<u64>,
}

impl Ring {
    fn new() -> Ring {
        Ring { words: vec![0; 8] }
    }
    fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: 64 initialised bytes, borrowed mutably with `self`.
        unsafe { std::slice::from_raw_parts_mut(self.words.as_mut_ptr().cast(), 64) }
    }
    /// A header `{len, flags}` at position `pos` and `data` after it.
    fn put(&mut self, pos: u64, len: u32, flags: u32, data: &[u8]) {
        let off = (pos % 64) as usize;
        let b = self.bytes();
        b[off..off + 4].copy_from_slice(&len.to_le_bytes());
        b[off + 4..off + 8].copy_from_slice(&flags.to_le_bytes());
        b[off + 8..off + 8 + data.len()].copy_from_slice(data);
    }
    fn live(&mut self, consumer: u64) -> LiveRing {
        // SAFETY: the buffer outlives every use in these tests and is only accessed
        // from this thread.
        unsafe { LiveRing::from_raw(self.words.as_mut_ptr().cast(), 64, 0xd000, consumer) }
    }
}

/// One pass; (records taken, consumers published).
fn pass(r: &mut LiveRing, st: &mut RingState) -> (u64, Vec<(u64, u64)>) {
    let mut published = Vec::new();
    let p = r
        .drain(st, |at, c| {
            published.push((at, c));
            Ok(())
        })
        .unwrap();
    st.settle();
    assert_eq!(p.publishes, published.len() as u64);
    (p.records, published)
}

fn data(st: &RingState) -> Vec<(u64, &[u8])> {
    st.records
        .iter()
        .map(|r| (r.offset, r.data.as_slice()))
        .collect()
}

#[test]
fn live_drain_takes_committed_records_zeroes_them_and_publishes() {
    let mut ring = Ring::new();
    ring.put(0, 3, 0, b"abc");
    ring.put(16, 4, DISCARD, b"gone");
    ring.put(32, 2, BUSY, b"zz");
    let mut r = ring.live(0);
    let mut st = RingState::default();
    // A 64-byte ring gives bytes back every 16 (a quarter ring): after the record and
    // after the discarded one; the busy one stops the pass.
    assert_eq!(r.every, 16);
    assert_eq!(pass(&mut r, &mut st), (1, vec![(0xd000, 16), (0xd000, 32)]));
    assert_eq!(data(&st), vec![(0, &b"abc"[..])]);
    // What was consumed is zero; the busy record is untouched.
    assert!(ring.bytes()[..32].iter().all(|&b| b == 0));
    assert_eq!(&ring.bytes()[40..42], b"zz");
    // Nothing new: no record, nothing published.
    assert_eq!(pass(&mut r, &mut st), (0, vec![]));
    // Submitted, then padding up to the end (offset 48) and a record in the next lap
    // at offset 0: the walk wraps.
    ring.put(32, 2, 0, b"zz");
    ring.put(48, 8, DISCARD, b"");
    ring.put(64, 5, 0, b"hello");
    assert_eq!(
        pass(&mut r, &mut st),
        (2, vec![(0xd000, 48), (0xd000, 64), (0xd000, 80)])
    );
    assert_eq!(
        data(&st),
        vec![(0, &b"abc"[..]), (32, &b"zz"[..]), (64, &b"hello"[..])]
    );
    assert!(ring.bytes().iter().all(|&b| b == 0));
    assert_eq!(st.error, None);
}

#[test]
fn live_drain_of_a_full_ring_stops_after_one_ring() {
    // Four committed 16-byte records from position 64: the ring is full. The walk must
    // stop at 128, not read the record at 64 again (its header is still there).
    let mut ring = Ring::new();
    for (k, pos) in [64u64, 80, 96, 112].into_iter().enumerate() {
        ring.put(pos, 8, 0, &[k as u8; 8]);
    }
    let mut r = ring.live(64);
    let mut st = RingState::default();
    let every_16 = [80, 96, 112, 128].map(|c| (0xd000, c)).to_vec();
    assert_eq!(pass(&mut r, &mut st), (4, every_16));
    assert_eq!(st.records.last().map(|r| r.offset), Some(112));
    assert!(ring.bytes().iter().all(|&b| b == 0));
}

#[test]
fn live_drain_gives_bytes_back_after_the_record_that_ends_a_part() {
    // Records of 16, 24 and 16 bytes from 0 in a 64-byte ring (parts of 16 bytes): the
    // second starts in the second part and ends in the third, so that part ends after
    // it, at 40; the zeroing and each publication go exactly up to the part's end.
    let mut ring = Ring::new();
    ring.put(0, 8, 0, &[1; 8]);
    ring.put(16, 16, 0, &[2; 16]);
    ring.put(40, 8, 0, &[3; 8]);
    ring.put(56, 8, BUSY, b"");
    let mut r = ring.live(0);
    let mut st = RingState::default();
    let mut seen = Vec::new();
    let p = r
        .drain(&mut st, |_, c| {
            seen.push(c);
            Ok(())
        })
        .unwrap();
    assert_eq!((p.records, seen), (3, vec![16, 40, 56]));
    assert!(ring.bytes()[..56].iter().all(|&b| b == 0));
    assert_eq!(
        ring.words[7],
        u64::from(BUSY) << 32 | 8,
        "the busy header stays"
    );
}

#[test]
fn live_drain_walks_records_written_into_parts_it_gave_back() {
    // Consumer at 8: one record. After the first part is given back (consumer 24) the
    // producers may write up to 24 + 64 = 88; they do, and their last record ([64, 80))
    // crosses 72, where the pass began plus one ring. The pass takes it (the walk of a
    // part ends at the consumer published last plus the ring, never before), and ends
    // once it has walked one ring's worth.
    let mut ring = Ring::new();
    ring.put(8, 8, 0, &[1; 8]);
    let mut r = ring.live(8);
    let mut st = RingState::default();
    let mut seen = Vec::new();
    let p = r
        .drain(&mut st, |_, c| {
            if c == 24 {
                ring.put(24, 24, 0, &[2; 24]);
                ring.put(56, 0, DISCARD, b"");
                ring.put(64, 8, 0, &[3; 8]);
            }
            seen.push(c);
            Ok(())
        })
        .unwrap();
    st.settle();
    assert_eq!(st.error, None);
    assert_eq!((p.records, seen), (3, vec![24, 56, 80]));
    assert_eq!(
        data(&st),
        vec![(8, &[1; 8][..]), (24, &[2; 24][..]), (64, &[3; 8][..])]
    );
}

/// The drainer's loop beside a producer thread that follows the device's rules on a
/// 4096-byte ring: it writes a record only below the consumer it last saw published
/// plus the ring (acquire), finds those bytes zero (the drainer zeroed them before it
/// published), writes the data, then releases the header; a record that would cross the
/// ring's end is preceded by one padding record up to it. It waits when the ring is
/// full (the device would drop). Every record arrives once, in order, intact, and the
/// drainer, in parts of a quarter ring, took most of them while the producer ran.
#[test]
fn live_drain_keeps_up_with_a_producer_in_another_thread() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    const SIZE: u64 = 4096;
    const N: u64 = 20_000;
    let mut words = vec![0u64; (SIZE / 8) as usize];
    let base = words.as_mut_ptr() as usize;
    // SAFETY: 4096 bytes, 8-aligned, alive until the end of the test; the drainer and
    // the producer share them by the ring's rules.
    let mut live = [unsafe { LiveRing::from_raw(base as *mut u8, SIZE as usize, 0, 0) }];
    let mut states = [RingState::default()];
    let published = AtomicU64::new(0);
    let (stop, done) = (AtomicBool::new(false), AtomicBool::new(false));
    // Stops the drainer however the producer's side ends (a failed check panics, and
    // the scope then waits for the drainer).
    struct Stop<'a>(&'a AtomicBool);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    let stats = std::thread::scope(|s| {
        let _stop = Stop(&stop);
        let drainer = s.spawn(|| {
            drain_until(&mut live, &mut states, &stop, |at, c| {
                assert_eq!(at, 0);
                assert!(c > published.load(Ordering::Relaxed));
                published.store(c, Ordering::Release);
                Ok(())
            })
        });
        let mut p = 0u64;
        let t0 = std::time::Instant::now();
        let wait_room = |need: u64| loop {
            let c = published.load(Ordering::Acquire);
            if need <= c + SIZE {
                break;
            }
            assert!(
                t0.elapsed().as_secs() < 60,
                "the drainer gave no room back: need {need}, published {c}"
            );
            std::thread::yield_now();
        };
        let at = |pos: u64| (base + (pos % SIZE) as usize) as *mut u8;
        let header = |pos: u64| {
            // SAFETY: an 8-aligned position's header, inside the ring.
            unsafe { &*(at(pos) as *const AtomicU64) }
        };
        for i in 0..N {
            let len = 8 * (1 + i % 3); // 8, 16 or 24 data bytes
            let t = 8 + len;
            let off = p % SIZE;
            if off + t > SIZE {
                wait_room(p + (SIZE - off));
                header(p).store(
                    u64::from(DISCARD) << 32 | (SIZE - off - 8),
                    Ordering::Release,
                );
                p += SIZE - off;
            }
            wait_room(p + t);
            // SAFETY: `t` bytes at `p`, inside the ring (no record crosses its end), given
            // back by the drainer (zeroed, then published) and not yet written again.
            let rec = unsafe { std::slice::from_raw_parts_mut(at(p), t as usize) };
            assert!(rec.iter().all(|&b| b == 0), "record {i}: bytes not zeroed");
            for (k, b) in rec[8..].iter_mut().enumerate() {
                *b = (i as u8).wrapping_add(k as u8);
            }
            header(p).store(len, Ordering::Release);
            p += t;
        }
        done.store(true, Ordering::Release);
        // Let the drainer take what it can, then stop it as the kernel's end does.
        while published.load(Ordering::Acquire) < p && t0.elapsed().as_secs() < 60 {
            std::thread::yield_now();
        }
        stop.store(true, Ordering::Release);
        (drainer.join().unwrap().unwrap(), p)
    });
    let (stats, p) = stats;
    assert!(done.load(Ordering::Acquire));
    let st = &mut states[0];
    st.settle();
    assert_eq!(live[0].consumer, p, "everything given back");
    assert_eq!(st.records.len() as u64, N);
    for (i, r) in st.records.iter().enumerate() {
        let len = 8 * (1 + i as u64 % 3);
        assert_eq!(r.data.len() as u64, len, "record {i}");
        assert!(r
            .data
            .iter()
            .enumerate()
            .all(|(k, &b)| b == (i as u8).wrapping_add(k as u8)));
    }
    assert_eq!(stats.records, N);
    // Every record of 16 to 32 bytes passed through a 4096-byte ring: more than a
    // hundred rings' worth, given back in parts of a quarter ring.
    assert!(stats.publishes >= p / SIZE, "{stats:?}");
    assert!(stats.max_pass_records <= SIZE / 16, "{stats:?}");
    assert!(stats.first_record_us <= stats.last_record_us);
    assert!(stats.passes > stats.idle_passes, "{stats:?}");
}

#[test]
fn live_drain_keeps_what_it_read_before_a_bad_header() {
    let mut ring = Ring::new();
    ring.put(0, 1, 0, b"a");
    ring.put(16, 1, 1, b"b"); // unknown flag bit
    let mut r = ring.live(0);
    let mut st = RingState::default();
    assert_eq!(pass(&mut r, &mut st), (1, vec![(0xd000, 16)]));
    assert_eq!(
        st.error,
        Some(RingError::Flags {
            offset: 16,
            flags: 1
        })
    );
    // Stopped for good.
    ring.put(16, 1, 0, b"b");
    assert_eq!(pass(&mut r, &mut st), (0, vec![]));
}

#[test]
fn live_drain_does_not_advance_when_publishing_fails() {
    let mut ring = Ring::new();
    ring.put(0, 1, 0, b"a");
    let mut r = ring.live(0);
    let mut st = RingState::default();
    let e = r
        .drain(&mut st, |_, _| Err(crate::gpu::GpuError::NoDevice))
        .unwrap_err();
    assert!(matches!(e, crate::gpu::GpuError::NoDevice));
    assert_eq!(r.consumer, 0);
}

#[test]
fn map_counts_say_what_was_lost_by_kind() {
    use super::MapCounts;
    let c = MapCounts {
        full: 3,
        busy: 0,
        evicted: 0,
        dropped: 2,
    };
    assert_eq!(c.to_string(), "3 refused (full), 2 dropped (ring full)");
    assert_eq!(c.json(1), serde_json::json!({ "full": 3, "busy": 0 }));
    assert_eq!(
        c.json(9),
        serde_json::json!({ "full": 3, "busy": 0, "evicted": 0 })
    );
    assert_eq!(c.json(27), serde_json::json!({ "dropped": 2 }));
    assert_eq!(c.json(2), serde_json::json!({}));
    assert_eq!(MapCounts::default().to_string(), "");
}

#[test]
fn host_flags_name_runtime_maps_only() {
    let obj = corpus("globals.v4.o");
    let e = host_flags(&obj, &["nope".to_string()]).unwrap_err();
    assert!(
        matches!(&e, LoaderError::NoMap { name, .. } if name == "nope"),
        "{e}"
    );
    let data = obj
        .maps
        .iter()
        .find(|m| m.origin == bpf2ptx_compiler::program::MapOrigin::GlobalData)
        .unwrap();
    let e = host_flags(&obj, std::slice::from_ref(&data.name)).unwrap_err();
    assert!(matches!(e, LoaderError::NotPlaceable { .. }), "{e}");
}

#[test]
fn printk_formats() {
    assert_eq!(
        format_printk("sm %d lane %u\n", &[3, 31, 0]),
        "sm 3 lane 31\n"
    );
    assert_eq!(
        format_printk("%x %llx %5d|%%", &[255, u64::MAX, 42]),
        "ff ffffffffffffffff    42|%"
    );
    assert_eq!(format_printk("[%-4d]", &[7, 0, 0]), "[7   ]");
    assert_eq!(
        format_printk("%d %lld", &[u64::from(u32::MAX), u64::MAX, 0]),
        "-1 -1"
    );
}

/// `trace_vprintk` records (kind 2): the count and up to 12 arguments decode and format
/// like trace_printk's three; a count past the record or past 12 drops the record.
#[test]
fn vprintk_records_decode() {
    use bpf2ptx_runtime::printk;
    let fmt = "a=%d b=%u c=%x d=%lld e=%d f=%d g=%d h=%d i=%d j=%d k=%d l=%u\n";
    let string_at = |addr: u64, max: u64| {
        assert_eq!((addr, max), (0x1000, fmt.len() as u64 + 1));
        fmt.to_string()
    };
    let record = |kind: u64, n: u64, args: &[u64]| {
        let mut words = vec![kind, 0x1000, fmt.len() as u64 + 1, n];
        words.extend_from_slice(args);
        words
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .collect::<Vec<u8>>()
    };
    let args: Vec<u64> = (1..=12).collect();
    let mut all = args.clone();
    all[0] = u64::MAX;
    assert_eq!(
        super::printk::decode(&record(printk::KIND_TRACE_VPRINTK, 12, &all), &string_at),
        "a=-1 b=2 c=3 d=4 e=5 f=6 g=7 h=8 i=9 j=10 k=11 l=12\n"
    );
    // Four arguments (bpf_printk's smallest vprintk): the rest format as 0.
    assert_eq!(
        super::printk::decode(
            &record(printk::KIND_TRACE_VPRINTK, 4, &args[..4]),
            &string_at
        ),
        "a=1 b=2 c=3 d=4 e=0 f=0 g=0 h=0 i=0 j=0 k=0 l=0\n"
    );
    assert_eq!(
        record(printk::KIND_TRACE_VPRINTK, 4, &args[..4]).len() as u64,
        printk::vargs_record_bytes(4)
    );
    // A count the record does not hold, or above 12: a line that says so.
    let short = record(printk::KIND_TRACE_VPRINTK, 5, &args[..4]);
    assert_eq!(
        super::printk::decode(&short, &string_at),
        format!(
            "<printk record of {} bytes that does not decode (kind 2)>",
            short.len()
        )
    );
    let many: Vec<u64> = (0..13).collect();
    let over = record(printk::KIND_TRACE_VPRINTK, 13, &many);
    assert_eq!(
        super::printk::decode(&over, &string_at),
        format!(
            "<printk record of {} bytes that does not decode (kind 2)>",
            over.len()
        )
    );
    // trace_printk's record: three arguments, whatever follows.
    assert_eq!(
        super::printk::decode(&record(printk::KIND_TRACE_PRINTK, 7, &[8, 9]), &string_at),
        "a=7 b=8 c=9 d=0 e=0 f=0 g=0 h=0 i=0 j=0 k=0 l=0\n"
    );
    assert_eq!(
        format_printk("%d %d %d %d %d", &[1, 2, 3, 4, 5]),
        "1 2 3 4 5"
    );
}
