//! The ring buffer helpers on the device: PTX bodies of `ringbuf_reserve`,
//! `ringbuf_submit`, `ringbuf_discard`, `ringbuf_output` and `ringbuf_query`, and the
//! host-side record decoder, [`records`] / [`decode`].
//!
//! # Layout
//!
//! The descriptor and the ring's storage are specified in `specs/abi.md`, section "Maps
//! (device runtime)"; this module implements that contract for ringbufs (27), GPU ringbufs
//! (1527) and perf event arrays (4, which the compiler gives the same layout). The helpers
//! read descriptor word 0 (type), 3 (`data`: the ring, `aux` bytes, 8-aligned), 4 (`aux`:
//! ring bytes, a power of two ≥ 4096) and 5 (`aux2`: the address of two u64 counters
//! `[producer, consumer]`, byte positions that only grow and never wrap), and count drops
//! in word 6.
//!
//! A record at position `pos` lies at ring offset `pos % aux`: an 8-byte header
//! `{u32 len, u32 flags}` (flags: [`BUSY`] bit 31, [`DISCARD`] bit 30), then `len` data
//! bytes, padded to [`record_size`]`(len) = 8 + round8(len)` bytes.
//!
//! # Reserving never blocks, and scales with a warp's lanes
//!
//! A probe runs inside someone's kernel and must never wait for the host, or spin on a
//! counter other warps fight over. A reservation is one round per warp:
//!
//! 1. The lanes that reserve together (`activemask`) on the same descriptor
//!    (`match.any.sync.b64`) form a group; its leader is the lowest lane. Each lane's
//!    record takes `t = record_size(size)` bytes, and its offset in the group, `pre`, is
//!    the sum of `t` over the group's lower lanes (`popc` when all `t` agree, else one
//!    `shfl.sync` per lane).
//! 2. The leader reads the consumer (acquire) and the descriptor's **bound** (word 7,
//!    [`BOUND_OFFSET`]): the producer plus every byte claimed by leaders that have not yet
//!    moved the producer or given their claim back; `bound == producer` at rest. The room
//!    is `consumer + aux - bound`. The lanes whose record ends within it (`pre + t <=
//!    room`: the group's lowest) may take part; together they need `G0` bytes. When none
//!    fits, the group drops without an atomic: a full ring costs each leader two loads,
//!    and a leader that cannot succeed never holds a claim that makes another fail.
//! 3. The leader claims `G0` with one `atom.add` on the bound. What it returns, `old`,
//!    counts every byte taken or claimed before this claim exactly once, so the room
//!    really left is `consumer + aux - old`: the lanes whose record ends within that too
//!    take part (again the group's lowest; `G <= G0` bytes), the others drop. The leader
//!    gives back `G0 - G` (`red.add`, only when not all fit) and takes `[p, p + G)` with
//!    `atom.add` on the producer (no `cas`: it always succeeds).
//! 4. The leader broadcasts `p`; each taking part lane's record lies at `p + pre`.
//!
//! Why the producer never passes `consumer + aux`: every leader's share of the bound is at
//! least what it finally takes (`G0` until it gives back, `G` after), so when a set of
//! leaders has moved the producer, the one of them that claimed last on the bound saw
//! `old` at least the start plus the others' bytes, and took only what fit below
//! `consumer + aux` with the consumer it read. Two leaders reading the same positions
//! cannot both add (a plain check-then-add could). A claim that does not fit still
//! counts until it is given back, so a concurrent leader can drop with room left (only
//! while such a claim, made with an older bound, is in flight: two atomics); with room
//! for everyone, no claim is ever too large and no one drops.
//!
//! This replaced (issue 12) an in-flight word checked as `producer + in_flight + G -
//! consumer <= aux`, claimed before the check (and before any look at the room in the
//! inlined output) and retried up to 8 times when other claims were in flight. It counted
//! a leader that had moved the producer and not yet given its claim back twice, and
//! every failing claim against every other check: under load (`ring_live`: hundreds of
//! warps every 10 µs against a full 64 KiB ring) the claims of leaders that could not
//! succeed kept the in-flight word above the ring's size, so leaders failed after the
//! host had freed the ring, and a ring drained live kept no more records than one read
//! after the kernel. `tests/ring_claims.rs` explores every interleaving of a few leaders
//! and a host that frees the ring, on a sequentially consistent model of both: the
//! producer never passes `consumer + aux`; with the bound no one drops when everything
//! fits and leaders that saw the freed ring all take their bytes when they fit, where the
//! old protocol fails both.
//!
//! Drops (no room, or room taken by others first) are counted in the descriptor's
//! `drops` word, once per group by the leader; `reserve` returns NULL (`output` -EAGAIN).
//! A size of 0, or above `aux / 2`, is also a drop (counted): such a record could never be
//! (usefully) stored. Word 7 equals the producer at rest (the compiler emits both as 0): a
//! host that sets the producer (resets or moves the ring's positions between launches)
//! sets word 7 to the same value (a bound below the consumer makes every reservation drop,
//! one below the producer lets reservations overwrite records not yet read). A descriptor that is unbound (`data` or `aux2` 0), of
//! another map type, or whose `aux` is not a power of two in 4096..=2^32 makes `reserve`
//! return NULL and `output` -EINVAL, without counting. The ring functions need PTX ISA
//! [`MIN_PTX`] (6.2, for `activemask`) and sm_70.
//!
//! Measured on an H200 with the in-flight word of before (4096 x 256 = 1,048,576 threads
//! each reserving once, 16 data bytes, 32 MiB ring): 1,048,576 records and 0 drops in
//! 0.17 ms, where the former 64-try `cas` loop kept about 1,600 and ran 57 ms (see
//! benches/results/device-runtime-history.md, "Ring reservation under contention"); the
//! bound does one atomic fewer per group.
//!
//! # A record never wraps
//!
//! So that the record is one contiguous range the probe can write through a plain pointer.
//! A group's range `[p, p + G)` is at most `aux` bytes, so at most one of its records meets
//! the ring's end. That lane turns its bytes into two padding records, `{head - 8,
//! DISCARD}` at its offset (`head` = bytes up to the end) and `{t - head - 8, DISCARD}` at
//! offset 0 (both lengths multiples of 8, `t` and `head` at least 8), which a reader skips,
//! and reserves again ([`RESERVE_ROUNDS`]: once more; meeting the end again drops it).
//!
//! # What a reader can rely on
//!
//! Once its bytes are taken, the lane writes the header `{len, BUSY}` (one 64-bit store).
//! `submit` clears the flags with a release store (0), `discard` sets them to `DISCARD`
//! the same way; the release orders the probe's writes to the record before the flags.
//! So a reader that reads the flags with acquire semantics and sees BUSY clear also sees
//! the record's bytes. A reader goes from `consumer` on and stops at the first record not
//! yet committed: flags with BUSY, or a header that is all zeros (the producer has moved
//! past it but the reserving thread has not written it yet; no committed record has
//! length 0), or the producer position when it knows it. For the second rule to hold, the
//! ring starts zeroed (module storage and the loader's host memory do) and a reader that
//! consumes while producers run zeroes the bytes it consumed before it advances
//! `consumer` ([`clear`]). Every byte from the producer up to `consumer + aux` is then
//! zero, so a reader that does not know the producer ([`scan`] with `end = consumer +
//! aux`) stops where a reader that knows it would, or earlier.
//!
//! # Placement: the record side and the counter side
//!
//! A ring has two sides. The **counter side** is the descriptor (words 4-7) and the
//! counters `[producer, consumer]` (word 5): always in device memory (the module's
//! `bpf2ptx_mapctr_*`), whatever the placement, and every operation on it (the bound's
//! claim and give-back, the producer `atom.add`, the drops, the loads, `query`) has
//! `.gpu` scope. The **record side** is the ring's bytes (word 3), in device memory or, for
//! a ring placed in the host (`--map NAME=host`), in pinned host memory mapped into the
//! GPU, which the host drains while the kernel runs. Only the record side's ordered stores
//! (the `{len, BUSY}` header, the padding headers, the release store of `submit` and
//! `discard`) take the placement's scope: [`functions_at`]`(Scope::Sys)` makes them `.sys`,
//! so a CPU that reads a header with acquire semantics sees the record's bytes.
//!
//! Keeping the counters in device memory keeps a reservation short: a leader's claim lives
//! for a few device-memory atomics, not PCIe round trips, so the bound stays close to the
//! producer while thousands of warps reserve and the host keeps the ring drained.
//!
//! A host draining a host-placed ring while the kernel runs walks the records from its own
//! consumer position, reading each header with acquire semantics ([`scan_to`]), copies
//! the committed records, zeroes the bytes it consumed (host stores to host memory), and
//! then publishes the new consumer into the device-memory counter with a host-to-device
//! copy on a stream of its own (the kernel runs on another; copy engines run beside
//! kernels). The copies of one stream land in order, so the host need not wait for one
//! before it reads on (specs/abi.md, "Placement", says how often it publishes). Why a
//! reclaimed range is written only after it was zeroed:
//!
//! 1. the host's zeroing stores are done before the copy that publishes the consumer is
//!    issued;
//! 2. a leader's acquire load of the consumer sees the new value only after that copy;
//! 3. the bytes a lane writes are at positions that depend on the producer `atom.add` that
//!    followed that load in program order (the leader broadcasts its result; the lane
//!    cannot know where to write before it returned), and lie below `consumer + aux` for
//!    the consumer that this leader, or one whose producer `atom.add` came before (acq_rel:
//!    its load is ordered before this group's stores), read (step 3 of "Reserving"),
//!    i.e. over bytes the host gave back.
//!
//! After the kernel (or a stream synchronisation) the host reads both counters from device
//! memory and decodes what is left ([`decode`]) as for device placement. A ring whose
//! bytes are in host memory but whose module was compiled for device placement still
//! works that way after the kernel; a host that reads it during the kernel gets no
//! ordering promise. The module's `trace_printk` ring and perf event arrays (4) follow the
//! same rules.

use std::fmt;

use crate::maps::round8;

/// Map type id: perf event array (Linux `BPF_MAP_TYPE_PERF_EVENT_ARRAY`), one GPU ring.
pub const MAP_PERF_EVENT_ARRAY: u32 = crate::MapKind::PerfEventArray.id();
/// Map type id: ring buffer (Linux `BPF_MAP_TYPE_RINGBUF`).
pub const MAP_RINGBUF: u32 = crate::MapKind::Ringbuf.id();
/// Map type id: GPU ring buffer (bpftime).
pub const MAP_GPU_RINGBUF: u32 = crate::MapKind::GpuRingbuf.id();

/// Header flag: reserved, not yet submitted or discarded.
pub const BUSY: u32 = 1 << 31;
/// Header flag: discarded record, or padding up to the ring's end; readers skip it.
pub const DISCARD: u32 = 1 << 30;
/// Bytes of a record header.
pub const HEADER_SIZE: u64 = 8;
/// Lowest PTX ISA version of a module the ringbuf functions are pasted into: `activemask`
/// needs 6.2 (`match.any.sync`, `shfl.sync`, `vote.sync` 6.0), on sm_70 or later.
pub const MIN_PTX: (u32, u32) = (6, 2);
/// Reservation rounds of one lane: a record that met the ring's end is padded and reserved
/// again once; meeting it a second time drops it.
pub const RESERVE_ROUNDS: u32 = 2;
/// Byte offset in the descriptor of the bound (word 7): the producer plus every byte that
/// group leaders have claimed and neither added to the producer nor given back (module
/// doc, step 2); equal to the producer when no reserve runs.
pub const BOUND_OFFSET: u64 = crate::desc::BOUND;
/// Smallest ring (`aux`) the helpers accept.
pub const MIN_RING_SIZE: u64 = 4096;

/// `ringbuf_query` flag: producer - consumer.
pub const BPF_RB_AVAIL_DATA: u64 = 0;
/// `ringbuf_query` flag: ring bytes (`aux`).
pub const BPF_RB_RING_SIZE: u64 = 1;
/// `ringbuf_query` flag: the consumer position.
pub const BPF_RB_CONS_POS: u64 = 2;
/// `ringbuf_query` flag: the producer position.
pub const BPF_RB_PROD_POS: u64 = 3;

/// `-EAGAIN`: `ringbuf_output` dropped the record (no room, or a bad size).
pub const EAGAIN: i64 = -11;
/// `-EINVAL`: `ringbuf_output` on an unbound or malformed descriptor.
pub const EINVAL: i64 = crate::maps::EINVAL;

/// Bytes a record of `len` data bytes takes in the ring: header plus data padded to 8.
pub const fn record_size(len: u64) -> u64 {
    HEADER_SIZE + round8(len)
}

/// PTX prototypes of the five ringbuf helpers.
pub const RINGBUF_DECLARATIONS: &str = "\
.func (.param .b64 ret) bpf2ptx_ringbuf_reserve(.param .b64 desc, .param .b64 size, \
.param .b64 flags);
.func bpf2ptx_ringbuf_submit(.param .b64 data, .param .b64 flags);
.func bpf2ptx_ringbuf_discard(.param .b64 data, .param .b64 flags);
.func (.param .b64 ret) bpf2ptx_ringbuf_output(.param .b64 desc, .param .b64 data, \
.param .b64 size, .param .b64 flags);
.func (.param .b64 ret) bpf2ptx_ringbuf_query(.param .b64 desc, .param .b64 flags);
";

/// PTX prototypes of the ringbuf helpers (see [`RINGBUF_DECLARATIONS`]).
pub fn declarations() -> &'static str {
    RINGBUF_DECLARATIONS
}

/// PTX definitions of the ringbuf helpers and their private helpers (see
/// [`RINGBUF_FUNCTIONS`]).
pub fn functions() -> String {
    functions_at(crate::Scope::Gpu).into_owned()
}

/// [`functions`] with the record side at `record_scope` (module doc, "Placement"): the
/// header, padding and `submit`/`discard` stores, the lines of [`RINGBUF_FUNCTIONS`]
/// marked `// record side`, become `.sys` for [`Scope::Sys`](crate::Scope::Sys), for a
/// module whose rings have their bytes in host memory that the host drains while the
/// kernel runs. The counter side (claims, producer, consumer, drops, `query`) stays `.gpu`
/// in every module: the counters are in device memory in both placements.
pub fn functions_at(record_scope: crate::Scope) -> std::borrow::Cow<'static, str> {
    let filled = crate::fill_abi(RINGBUF_FUNCTIONS);
    if record_scope == crate::Scope::Gpu {
        return std::borrow::Cow::Owned(filled);
    }
    let text: String = filled
        .split_inclusive('\n')
        .map(|line| {
            if line.contains(RECORD_SIDE) {
                record_scope.apply(line)
            } else {
                std::borrow::Cow::Borrowed(line)
            }
        })
        .collect();
    std::borrow::Cow::Owned(text)
}

/// The comment that ends every record-side line of [`RINGBUF_FUNCTIONS`].
const RECORD_SIDE: &str = "// record side";

/// PTX definitions of `bpf2ptx_ringbuf_reserve`, `_submit`, `_discard`, `_output`,
/// `_query` and the private `.func`s they call (all named `bpf2ptx_ringbuf_*`), except
/// `bpf2ptx_copy`, which [`crate::COPY_FUNCTION`] defines.
///
/// No `.version`/`.target` header: the text goes into a module that has one (PTX ISA
/// [`MIN_PTX`] = 6.2 or later, sm_70 or later, 64-bit addresses). Every pointer is a generic address; the
/// functions are module-local. `flags` of reserve, submit, discard and output (Linux's
/// wakeup hints) are ignored: there is no one to wake.
pub const RINGBUF_FUNCTIONS: &str = include_str!("ptx/ringbuf.ptx");

/// One committed record, as [`decode`] finds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// Position of the record's header in the counters' space (monotonic; the header lies
    /// at ring offset `offset % ring.len()`).
    pub offset: u64,
    /// The record's `len` data bytes.
    pub data: Vec<u8>,
}

/// What a reader found between `consumer` and `producer`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// Committed records in order (discarded and padding records skipped).
    pub records: Vec<Record>,
    /// The position the reader stopped at: where it may advance `consumer` to (after
    /// [`clear`]ing the bytes, if producers are still running).
    pub consumer: u64,
    /// `producer - consumer` after the stop: bytes reserved but not yet committed (a BUSY
    /// record, or a header not yet written, and everything after it). 0 when all was read.
    pub pending: u64,
}

/// A ring that cannot be decoded: a bug in a producer, a host that wrote the counters, or
/// the wrong bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RingError {
    /// The ring's length is not a power of two of at least 16 bytes.
    RingSize {
        /// Bytes.
        len: usize,
    },
    /// `consumer > producer`, `producer - consumer > ring length`, or a position not a
    /// multiple of 8.
    Positions {
        /// Producer position.
        producer: u64,
        /// Consumer position.
        consumer: u64,
    },
    /// A header whose record would end past the producer position (for a reader that
    /// does not know the producer, [`scan`] with `end = consumer + size`: more than the
    /// ring's size past the consumer, where the producer never is).
    PastProducer {
        /// Position of the header.
        offset: u64,
        /// Its `len`.
        len: u32,
    },
    /// A header whose record would run past the ring's end.
    Wraps {
        /// Position of the header.
        offset: u64,
        /// Its `len`.
        len: u32,
    },
    /// A header with flag bits other than BUSY or DISCARD.
    Flags {
        /// Position of the header.
        offset: u64,
        /// Its flags.
        flags: u32,
    },
}

impl fmt::Display for RingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RingError::RingSize { len } => {
                write!(f, "ring of {len} bytes: not a power of two >= 16")
            }
            RingError::Positions { producer, consumer } => {
                write!(f, "bad positions: producer {producer}, consumer {consumer}")
            }
            RingError::PastProducer { offset, len } => write!(
                f,
                "record at {offset} of length {len} ends past the producer position"
            ),
            RingError::Wraps { offset, len } => write!(
                f,
                "record at {offset} of length {len} runs past the ring's end"
            ),
            RingError::Flags { offset, flags } => {
                write!(f, "record at {offset}: unknown flags {flags:#010x}")
            }
        }
    }
}

impl std::error::Error for RingError {}

/// The committed records between `consumer` and `producer` in `ring` (the `aux` bytes the
/// descriptor's `data` points at), in order; discarded records and padding are skipped,
/// and decoding stops at the first record not yet committed ([`decode`] says how many
/// bytes were pending there).
pub fn records(ring: &[u8], producer: u64, consumer: u64) -> Result<Vec<Record>, RingError> {
    decode(ring, producer, consumer).map(|d| d.records)
}

/// [`records`], plus where the reader stopped and how many bytes were pending.
///
/// A header with BUSY set, or all zeros (reserved, header not yet written), stops the
/// reader. A header with unknown flags, or whose record ends past `producer` or past the
/// ring's end, is an error. Never panics.
pub fn decode(ring: &[u8], producer: u64, consumer: u64) -> Result<Decoded, RingError> {
    let size = ring.len() as u64;
    if !size.is_power_of_two() || size < 16 {
        return Err(RingError::RingSize { len: ring.len() });
    }
    if consumer > producer || producer - consumer > size || !(producer | consumer).is_multiple_of(8)
    {
        return Err(RingError::Positions { producer, consumer });
    }
    let mut out = Vec::new();
    let header = |off: u64| {
        let at = off as usize;
        let mut h = [0u8; 8];
        h.copy_from_slice(&ring[at..at + 8]);
        u64::from_le_bytes(h)
    };
    let walk = scan(size, consumer, producer, header, |pos, off, len| {
        let at = (off + HEADER_SIZE) as usize;
        out.push(Record {
            offset: pos,
            data: ring[at..at + len as usize].to_vec(),
        });
    });
    match walk.error {
        Some(e) => Err(e),
        None => Ok(Decoded {
            records: out,
            consumer: walk.consumer,
            pending: producer - walk.consumer,
        }),
    }
}

/// Where a reader's walk over a ring ([`scan`]) stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scan {
    /// The position after the last record walked over (committed or discarded): where the
    /// reader may advance `consumer` to, after [`clear`]ing the bytes if producers run.
    pub consumer: u64,
    /// The header that stopped the walk because it cannot be a record (a producer bug, or
    /// the wrong bytes); `None` when the walk stopped at an uncommitted record or `end`.
    pub error: Option<RingError>,
}

/// Walks a ring of `size` bytes (a power of two of at least 16) from position `consumer`,
/// record by record, the way every reader does, live or not ("What a reader can rely on"
/// in the module doc).
///
/// `header(off)` gives the 64-bit little-endian header at ring offset `off` (8-aligned,
/// below `size`); a reader that runs beside the producers reads it with acquire semantics.
/// `record(pos, off, len)` is called for every committed record, in order: its header is
/// at position `pos`, ring offset `off`, its `len` data bytes at ring offset `off + 8`
/// (inside the ring: a record never wraps). Discarded records and padding are skipped.
///
/// The walk stops at the first header with BUSY set or all zero, at position `end` (the
/// producer, for a reader that knows it; `consumer + size` for a reader that does not:
/// the bytes between the producer and `consumer + size` are zero, so it stops at the
/// producer or before), or at a header that cannot be a record: unknown flags, a record
/// running past the ring's end or past `end` (an error in [`Scan::error`]; the records
/// before it were given to `record`). A `consumer` not 8-aligned or an `end` below it or
/// more than `size` past it walks nothing and is an error. Never panics and never reads a
/// header twice.
pub fn scan(
    size: u64,
    consumer: u64,
    end: u64,
    header: impl FnMut(u64) -> u64,
    record: impl FnMut(u64, u64, u32),
) -> Scan {
    scan_to(size, consumer, end, end, header, record)
}

/// [`scan`] that also stops, without an error, before the first header at or past
/// position `stop_at` (the last record walked may end past it, never past `end`): a
/// reader beside the producers walks a part of what is there and gives those bytes back
/// before it walks on. The walk reached `stop_at` when `Scan::consumer >= stop_at` (it has
/// not read the header there); a `stop_at` at or past `end` makes it [`scan`].
pub fn scan_to(
    size: u64,
    consumer: u64,
    end: u64,
    stop_at: u64,
    mut header: impl FnMut(u64) -> u64,
    mut record: impl FnMut(u64, u64, u32),
) -> Scan {
    let stop = |error| Scan {
        consumer,
        error: Some(error),
    };
    if !size.is_power_of_two() || size < 16 {
        return stop(RingError::RingSize {
            len: usize::try_from(size).unwrap_or(usize::MAX),
        });
    }
    if end < consumer || end - consumer > size || !(end | consumer).is_multiple_of(8) {
        return stop(RingError::Positions {
            producer: end,
            consumer,
        });
    }
    let mut pos = consumer;
    let mut error = None;
    let stop_at = stop_at.min(end);
    while pos < stop_at {
        // off is a multiple of 8 below size (a power of two >= 16): the header fits.
        let off = pos % size;
        let h = header(off);
        let (len, flags) = (h as u32, (h >> 32) as u32);
        if flags & BUSY != 0 || h == 0 {
            break;
        }
        let total = record_size(u64::from(len));
        error = if flags & !DISCARD != 0 {
            Some(RingError::Flags { offset: pos, flags })
        } else if off + total > size {
            Some(RingError::Wraps { offset: pos, len })
        } else if total > end - pos {
            Some(RingError::PastProducer { offset: pos, len })
        } else {
            None
        };
        if error.is_some() {
            break;
        }
        if flags == 0 {
            record(pos, off, len);
        }
        pos += total;
    }
    Scan {
        consumer: pos,
        error,
    }
}

/// Zero the ring bytes of positions `from..to` (what a reader consumed), so that a header
/// the producers reserve there later reads as "not yet written" until it is. A reader that
/// consumes while producers run calls this before it advances `consumer` to `to`.
///
/// # Panics
///
/// If the ring is empty or `to - from` exceeds its length.
pub fn clear(ring: &mut [u8], from: u64, to: u64) {
    let size = ring.len() as u64;
    assert!(size > 0 && from <= to && to - from <= size, "range");
    for pos in from..to {
        ring[(pos % size) as usize] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Write a header at position `pos` of `ring` and `data` after it.
    fn put(ring: &mut [u8], pos: u64, len: u32, flags: u32, data: &[u8]) {
        let off = (pos % ring.len() as u64) as usize;
        ring[off..off + 4].copy_from_slice(&len.to_le_bytes());
        ring[off + 4..off + 8].copy_from_slice(&flags.to_le_bytes());
        ring[off + 8..off + 8 + data.len()].copy_from_slice(data);
    }

    #[test]
    fn sizes() {
        assert_eq!(record_size(1), 16);
        assert_eq!(record_size(8), 16);
        assert_eq!(record_size(9), 24);
    }

    #[test]
    fn committed_discarded_and_busy() {
        let mut ring = vec![0u8; 64];
        put(&mut ring, 0, 3, 0, b"abc");
        put(&mut ring, 16, 4, DISCARD, b"gone");
        put(&mut ring, 32, 8, 0, b"12345678");
        put(&mut ring, 48, 2, BUSY, b"zz");
        let d = decode(&ring, 64, 0).unwrap();
        assert_eq!(
            d.records,
            vec![
                Record {
                    offset: 0,
                    data: b"abc".to_vec()
                },
                Record {
                    offset: 32,
                    data: b"12345678".to_vec()
                },
            ]
        );
        assert_eq!((d.consumer, d.pending), (48, 16));
        // Once submitted, the busy record is read too.
        put(&mut ring, 48, 2, 0, b"zz");
        let d = decode(&ring, 64, 48).unwrap();
        assert_eq!(d.records.len(), 1);
        assert_eq!((d.consumer, d.pending), (64, 0));
        assert_eq!(records(&ring, 64, 64).unwrap(), vec![]);
    }

    #[test]
    fn padding_at_the_ring_end_is_skipped() {
        // A 64-byte ring, consumer at 40: a 16-byte record at 40, then one of 24 bytes
        // that does not fit in the 8 bytes left, so padding {0, DISCARD} at 56 and the
        // record at 64 (offset 0). Offset 0 holds it; the old bytes there were consumed.
        let mut ring = vec![0xeeu8; 64];
        put(&mut ring, 40, 5, 0, b"hello");
        put(&mut ring, 56, 0, DISCARD, b"");
        put(&mut ring, 64, 16, 0, &[7; 16]);
        let d = decode(&ring, 88, 40).unwrap();
        assert_eq!(
            d.records,
            vec![
                Record {
                    offset: 40,
                    data: b"hello".to_vec()
                },
                Record {
                    offset: 64,
                    data: vec![7; 16]
                },
            ]
        );
        assert_eq!(d.consumer, 88);
        // A longer padding record (len = pad - 8).
        let mut ring = vec![0u8; 64];
        put(&mut ring, 104, 16, DISCARD, b"");
        put(&mut ring, 128, 1, 0, b"x");
        let r = records(&ring, 144, 104).unwrap();
        assert_eq!(
            r,
            vec![Record {
                offset: 128,
                data: b"x".to_vec()
            }]
        );
    }

    #[test]
    fn unwritten_header_stops_the_reader() {
        // The producer moved past 16 but the reserving thread has not written its header.
        let mut ring = vec![0u8; 64];
        put(&mut ring, 0, 4, 0, b"abcd");
        let d = decode(&ring, 48, 0).unwrap();
        assert_eq!(d.records.len(), 1);
        assert_eq!((d.consumer, d.pending), (16, 32));
        // After clearing what was consumed, a stale record there reads as unwritten.
        clear(&mut ring, 0, 16);
        assert_eq!(decode(&ring, 64, 0).unwrap().pending, 64);
    }

    /// Records as [`scan`] reports them: (position, data bytes).
    type Walked = Vec<(u64, Vec<u8>)>;

    /// [`scan`] over `ring` from `consumer` to `end`: (records as (pos, data), stop, error).
    fn walk(ring: &[u8], consumer: u64, end: u64) -> (Walked, u64, Option<RingError>) {
        let mut got = Vec::new();
        let header = |off: u64| {
            let at = off as usize;
            u64::from_le_bytes(ring[at..at + 8].try_into().unwrap())
        };
        let s = scan(ring.len() as u64, consumer, end, header, |pos, off, len| {
            let at = (off + HEADER_SIZE) as usize;
            got.push((pos, ring[at..at + len as usize].to_vec()));
        });
        (got, s.consumer, s.error)
    }

    #[test]
    fn live_walk_without_the_producer() {
        // A live reader knows only its consumer: it walks at most one ring's worth and
        // stops at a BUSY header or an all-zero one.
        let mut ring = vec![0u8; 128];
        put(&mut ring, 0, 3, 0, b"abc");
        put(&mut ring, 16, 4, DISCARD, b"gone");
        put(&mut ring, 32, 8, 0, b"12345678");
        put(&mut ring, 48, 2, BUSY, b"zz");
        put(&mut ring, 64, 1, 0, b"x"); // committed, but behind the busy one
        let (got, stop, err) = walk(&ring, 0, 128);
        assert_eq!(got, vec![(0, b"abc".to_vec()), (32, b"12345678".to_vec())]);
        assert_eq!((stop, err), (48, None));
        // Submitted: the walk goes on and stops at the zero header at 80 (not yet written,
        // or past the producer: the reader cannot tell and need not).
        put(&mut ring, 48, 2, 0, b"zz");
        let (got, stop, err) = walk(&ring, 48, 48 + 128);
        assert_eq!(got, vec![(48, b"zz".to_vec()), (64, b"x".to_vec())]);
        assert_eq!((stop, err), (80, None));
        // Nothing to read: a zero header at the consumer.
        assert_eq!(walk(&ring, 80, 80 + 128), (vec![], 80, None));
    }

    #[test]
    fn live_walk_wraps_and_stops_after_one_ring() {
        // 64-byte ring, consumer at 3 * 64 + 40: a record at offset 40, padding {0,
        // DISCARD} at 56, then records at offsets 0, 16, 32 of the next lap: the ring is
        // full (producer = consumer + 64) and every record committed, so the walk must stop
        // after 64 bytes and not read the first record again.
        let c = 3 * 64 + 40;
        let mut ring = vec![0u8; 64];
        put(&mut ring, c, 5, 0, b"hello");
        put(&mut ring, c + 16, 0, DISCARD, b"");
        put(&mut ring, c + 24, 2, 0, b"p1");
        put(&mut ring, c + 40, 8, 0, b"p2p2p2p2");
        // A header at c + 56 (offset 32, 8 bytes before the first record) that claims
        // more than those 8 bytes: no producer can have put it there.
        put(&mut ring, c + 56, 1, 0, b"");
        let (got, stop, err) = walk(&ring, c, c + 64);
        assert_eq!(
            got,
            vec![
                (c, b"hello".to_vec()),
                (c + 24, b"p1".to_vec()),
                (c + 40, b"p2p2p2p2".to_vec()),
            ]
        );
        assert_eq!(stop, c + 56);
        assert_eq!(
            err,
            Some(RingError::PastProducer {
                offset: c + 56,
                len: 1
            })
        );
        // Padding there instead: a full ring, all read, the walk ends at exactly c + 64.
        put(&mut ring, c + 56, 0, DISCARD, b"");
        let (got, stop, err) = walk(&ring, c, c + 64);
        assert_eq!((got.len(), stop, err), (3, c + 64, None));
        // After the reader consumed and cleared it all, the walk finds nothing.
        clear(&mut ring, c, c + 64);
        assert_eq!(walk(&ring, c + 64, c + 128), (vec![], c + 64, None));
    }

    #[test]
    fn padding_split_over_the_ring_end_is_skipped_live() {
        // A 24-byte record met the end at offset 48 of a 64-byte ring: padding {8,
        // DISCARD} at 48 (head = 16) and {0, DISCARD} at offset 0 of the next lap
        // (t - head - 8 = 0), then the record reserved again at 72.
        let mut ring = vec![0u8; 64];
        put(&mut ring, 48, 8, DISCARD, b"");
        put(&mut ring, 64, 0, DISCARD, b"");
        put(&mut ring, 72, 16, 0, &[9; 16]);
        let (got, stop, err) = walk(&ring, 48, 48 + 64);
        assert_eq!((got, stop, err), (vec![(72, vec![9; 16])], 96, None));
    }

    #[test]
    fn a_walk_in_parts_reads_what_one_walk_reads() {
        // A full 128-byte ring, consumer at 2 * 128 + 16: records of 16, 24, 16, 8 data
        // bytes and padding. Walked to stop_at in parts of 40 bytes (each part ends after
        // the record that reaches its stop, never past `end`, and reads no header at or
        // past the stop), the parts give the records one walk gives, in order, with no
        // header read twice.
        let c = 2 * 128 + 16;
        let mut ring = vec![0u8; 128];
        put(&mut ring, c, 16, 0, &[1; 16]);
        put(&mut ring, c + 24, 24, 0, &[2; 24]);
        put(&mut ring, c + 56, 8, DISCARD, b"");
        put(&mut ring, c + 72, 16, 0, &[3; 16]);
        put(&mut ring, c + 96, 8, 0, &[4; 8]);
        put(&mut ring, c + 112, 8, 0, &[5; 8]);
        let (whole, stop, err) = walk(&ring, c, c + 128);
        assert_eq!((whole.len(), stop, err), (5, c + 128, None));
        let mut parts = Vec::new();
        let mut reads = Vec::new();
        let mut at = c;
        let mut stops = Vec::new();
        while at < c + 128 {
            let header = |off: u64| {
                reads.push(off);
                let i = off as usize;
                u64::from_le_bytes(ring[i..i + 8].try_into().unwrap())
            };
            let s = scan_to(128, at, c + 128, at + 40, header, |pos, off, len| {
                let i = (off + HEADER_SIZE) as usize;
                parts.push((pos, ring[i..i + len as usize].to_vec()));
            });
            assert_eq!(s.error, None);
            assert!(
                s.consumer >= (at + 40).min(c + 128),
                "stopped early at {}",
                s.consumer
            );
            stops.push(s.consumer - c);
            at = s.consumer;
        }
        assert_eq!(parts, whole);
        assert_eq!(stops, vec![56, 96, 128]);
        let mut once = reads.clone();
        once.sort_unstable();
        once.dedup();
        assert_eq!(once.len(), reads.len(), "{reads:?}");
        // A stop at or past `end` is the plain walk; a BUSY header stops a part early.
        put(&mut ring, c + 72, 16, BUSY, &[3; 16]);
        let header = |off: u64| {
            let i = off as usize;
            u64::from_le_bytes(ring[i..i + 8].try_into().unwrap())
        };
        let s = scan_to(128, c, c + 128, c + 1000, header, |_, _, _| {});
        assert_eq!((s.consumer, s.error), (c + 72, None));
    }

    #[test]
    fn scan_rejects_bad_arguments_without_reading() {
        let never = |_: u64| -> u64 { panic!("read a header") };
        let s = scan(48, 0, 0, never, |_, _, _| {});
        assert_eq!(s.error, Some(RingError::RingSize { len: 48 }));
        for (c, e) in [(8, 0), (0, 72), (4, 12)] {
            let s = scan(64, c, e, never, |_, _, _| {});
            assert_eq!(
                (s.consumer, s.error),
                (
                    c,
                    Some(RingError::Positions {
                        producer: e,
                        consumer: c
                    })
                )
            );
        }
        // Unknown flags and a record past the ring's end stop the walk with an error.
        let mut ring = vec![0u8; 64];
        put(&mut ring, 0, 1, 0, b"a");
        put(&mut ring, 16, 1, 1, b"");
        let (got, stop, err) = walk(&ring, 0, 64);
        assert_eq!((got.len(), stop), (1, 16));
        assert_eq!(
            err,
            Some(RingError::Flags {
                offset: 16,
                flags: 1
            })
        );
        put(&mut ring, 16, 48, 0, b"");
        assert_eq!(
            walk(&ring, 0, 64).2,
            Some(RingError::Wraps {
                offset: 16,
                len: 48
            })
        );
    }

    #[test]
    fn record_side_only_is_system_scope() {
        let sys = functions_at(crate::Scope::Sys);
        let gpu = functions();
        let marked: Vec<&str> = gpu.lines().filter(|l| l.contains(RECORD_SIDE)).collect();
        // The header, the two padding headers, submit's and discard's release stores.
        assert_eq!(marked.len(), 5);
        assert!(marked.iter().all(|l| l.trim_start().starts_with("st.")));
        assert_eq!(sys.matches(".sys.").count(), 5);
        assert_eq!(
            sys.matches(".gpu.").count(),
            functions().matches(".gpu.").count() - 5
        );
        for l in sys.lines() {
            let op = l.trim_start();
            if op.starts_with("atom.") || op.starts_with("red.") || op.starts_with("ld.") {
                assert!(!op.contains(".sys."), "counter side at .sys: {l}");
            }
        }
        assert!(sys.contains("st.release.sys.b32"));
        assert_eq!(functions_at(crate::Scope::Gpu), functions());
    }

    #[test]
    fn malformed_headers_are_errors() {
        let mut ring = vec![0u8; 64];
        put(&mut ring, 0, 20, 0, b"");
        assert_eq!(
            records(&ring, 16, 0),
            Err(RingError::PastProducer { offset: 0, len: 20 })
        );
        put(&mut ring, 0, u32::MAX, 0, b"");
        assert_eq!(
            records(&ring, 64, 0),
            Err(RingError::Wraps {
                offset: 0,
                len: u32::MAX
            })
        );
        put(&mut ring, 48, 9, DISCARD, b"");
        assert_eq!(
            records(&ring, 112, 48),
            Err(RingError::Wraps { offset: 48, len: 9 })
        );
        put(&mut ring, 0, 1, 1, b"");
        assert_eq!(
            records(&ring, 64, 0),
            Err(RingError::Flags {
                offset: 0,
                flags: 1
            })
        );
        // Bad positions and ring sizes.
        for (p, c) in [(0, 8), (72, 0), (12, 4)] {
            assert_eq!(
                records(&ring, p, c),
                Err(RingError::Positions {
                    producer: p,
                    consumer: c
                })
            );
        }
        assert_eq!(
            records(&[0; 48], 0, 0),
            Err(RingError::RingSize { len: 48 })
        );
        assert_eq!(records(&[], 0, 0), Err(RingError::RingSize { len: 0 }));
        assert!(RingError::Wraps { offset: 0, len: 1 }
            .to_string()
            .contains("ring's end"));
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..2000 {
            let mut ring = vec![0u8; 64];
            for b in ring.iter_mut() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                *b = if x.is_multiple_of(3) {
                    (x >> 8) as u8 & 0x1f
                } else {
                    0
                };
            }
            let consumer = (x % 200) & !7;
            let producer = consumer + (((x >> 16) % 72) & !7);
            if let Ok(d) = decode(&ring, producer, consumer) {
                assert!(d.consumer <= producer && d.consumer + d.pending == producer);
            }
        }
    }

    #[test]
    fn ptx_text_defines_every_function_it_calls_but_the_copy() {
        let text = functions();
        assert!(!text.contains(".version") && !text.contains(".target"));
        for name in [
            "bpf2ptx_ringbuf_reserve",
            "bpf2ptx_ringbuf_submit",
            "bpf2ptx_ringbuf_discard",
            "bpf2ptx_ringbuf_output",
            "bpf2ptx_ringbuf_query",
        ] {
            assert!(declarations().contains(&format!(" {name}(")), "{name}");
            assert_eq!(text.matches(&format!(" {name}(")).count(), 1, "{name}");
        }
        for line in text.lines().filter(|l| l.starts_with(".func")) {
            assert!(line.contains("bpf2ptx_ringbuf_"), "{line}");
        }
        crate::tests::assert_calls_resolve(&text);
        // Every declaration matches its definition's signature.
        for decl in declarations().lines() {
            assert!(text.contains(decl.trim_end_matches(';')), "{decl}");
        }
        assert_eq!(declarations().lines().count(), 5);
    }

    #[test]
    fn reserve_is_warp_aggregated_without_cas() {
        let text = functions();
        for op in [
            "activemask.b32",
            "match.any.sync.b64",
            "vote.sync.ballot.b32",
        ] {
            assert!(text.contains(op), "{op}");
        }
        assert!(!text.contains(".cas."));
        // The bound (word 7) is read, claimed and given back once each, in that order, after
        // the consumer's acquire load and before the producer's atom.add (module doc,
        // steps 2-3); nothing else touches it, and no loop goes back to the claim.
        assert_eq!(BOUND_OFFSET, 7 * 8);
        let word7 = format!("[%rd1+{BOUND_OFFSET}]");
        assert_eq!(text.matches(&word7).count(), 3);
        let at = |line: &str| {
            assert_eq!(text.matches(line).count(), 1, "{line}");
            text.find(line).unwrap()
        };
        let order = [
            "ld.acquire.gpu.u64 %rd15, [%rd8];".to_string(),
            format!("ld.relaxed.gpu.u64 %rd14, {word7};"),
            format!("atom.relaxed.gpu.add.u64 %rd20, {word7}, %rd18;"),
            format!("@%p11 red.relaxed.gpu.add.u64 {word7}, %rd22;"),
            "@!%p10 atom.acq_rel.gpu.add.u64 %rd19, [%rd7], %rd21;".to_string(),
        ];
        let pos: Vec<usize> = order.iter().map(|l| at(l)).collect();
        assert!(pos.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        // The only backward branch of reserve is the second round of a padded record.
        let reserve = &text[text
            .find(".func (.param .b64 ret) bpf2ptx_ringbuf_reserve(")
            .unwrap()..];
        let reserve = &reserve[..reserve.find("\n}\n").unwrap()];
        assert!(!reserve.contains("$Lrsv_claim:"));
        assert_eq!(reserve.matches("bra $Lrsv_round;").count(), 1);
        assert_eq!(MIN_PTX, (6, 2));
    }
}
