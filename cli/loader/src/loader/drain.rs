//! Reading rings: after a kernel through the descriptor, by copies ([`Loader::records`]),
//! and while it runs straight from pinned host memory ([`LiveRing`], [`drain_until`]).

use super::{word, DrainStats, Loader, LoaderError};
use crate::gpu::{Gpu, GpuError, HostBuffer};
use bpf2ptx_runtime::ringbuf::{self, Record, RingError};
use bpf2ptx_runtime::{desc, MapKind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The host's side of a ring: its records so far.
#[derive(Default)]
pub(super) struct RingState {
    /// Records read so far, in order (after [`RingState::settle`]).
    pub(super) records: Vec<Record>,
    /// A ring that could not be decoded (a producer bug): reading stopped there.
    pub(super) error: Option<RingError>,
    /// Records the live drainer took and has not made [`Record`]s of yet: their data
    /// bytes back to back, and each one's position and length. A pass then costs one
    /// copy per record into one growing buffer, no allocation per record, so the drainer
    /// hands the ring back sooner.
    pub(super) staged_bytes: Vec<u8>,
    pub(super) staged: Vec<(u64, u32)>,
}

impl RingState {
    /// Turns the staged records into [`Record`]s, after the ones read before.
    pub(super) fn settle(&mut self) {
        let mut at = 0;
        self.records.reserve(self.staged.len());
        for (offset, len) in self.staged.drain(..) {
            let end = at + len as usize;
            self.records.push(Record {
                offset,
                data: self.staged_bytes[at..end].to_vec(),
            });
            at = end;
        }
        self.staged_bytes = Vec::new();
    }
}

impl Loader<'_> {
    /// A ring's records read so far plus those still in it, in order; `None` when the
    /// module has no ring of that name. Reading advances the ring's consumer, so each
    /// record is returned once over the loader's life (later calls return it again from
    /// the loader's copy).
    pub fn records(&mut self, name: &str) -> Result<Option<&[Record]>, LoaderError> {
        let Some(k) = self.maps.iter().position(|b| {
            self.obj.maps[b.index].name == name && self.obj.maps[b.index].is(MapKind::is_ring)
        }) else {
            return Ok(None);
        };
        self.collect_ring(k)?;
        Ok(Some(&self.maps[k].ring.records))
    }

    /// Reads what is left in ring `k` (device or host memory) into its state and moves its
    /// consumer to the end.
    pub(super) fn collect_ring(&mut self, k: usize) -> Result<(), LoaderError> {
        let b = &mut self.maps[k];
        let d = self.gpu.read(b.desc, desc::BYTES as usize)?;
        collect(self.gpu, &d, &mut b.ring)?;
        Ok(())
    }
}

/// Reads a ring's committed records from `consumer` on through its descriptor (device or
/// mapped host memory, by copies), appends them to `st` and advances the consumer past
/// them. Used after a kernel has ended.
pub(super) fn collect(gpu: &Gpu, d: &[u8], st: &mut RingState) -> Result<(), GpuError> {
    let (data, aux, ctr) = (
        desc::read(d, desc::DATA),
        desc::read(d, desc::AUX),
        desc::read(d, desc::AUX2),
    );
    if data == 0 || ctr == 0 || st.error.is_some() {
        return Ok(());
    }
    let ring = gpu.read(data, aux as usize)?;
    let c = gpu.read(ctr, 16)?;
    match ringbuf::decode(&ring, word(&c, 0), word(&c, 1)) {
        Ok(d) => {
            st.records.extend(d.records);
            // Zero what was consumed, as a live reader does, so that a later launch's
            // reservations there read as "not yet written" until they are.
            let (from, to) = (word(&c, 1), d.consumer);
            let mut at = from;
            while at < to {
                let off = at % aux;
                let n = (to - at).min(aux - off);
                gpu.write(data + off, &vec![0u8; n as usize])?;
                at += n;
            }
            gpu.write(ctr + 8, &to.to_le_bytes())?;
        }
        Err(e) => st.error = Some(e),
    }
    Ok(())
}

/// A ring whose bytes are in pinned host memory, read by the host directly while the
/// producers run; its consumer counter is in device memory.
pub(super) struct LiveRing {
    data: *mut u8,
    size: u64,
    /// Device address of the consumer counter (word 5's second u64).
    consumer_at: u64,
    /// The consumer position, as last published.
    pub(super) consumer: u64,
    /// A pass gives bytes back (zeroes them and publishes the consumer) every time it has
    /// walked this many, not only at its end ([`publish_every`]).
    pub(super) every: u64,
}

/// Bytes a drain pass walks between two consumer publications: a quarter of the ring, at
/// most 1 MiB. Producers that find the ring full get room back while the host is still
/// walking the rest, instead of after a whole ring and a copy's round trip; a publication
/// (an async copy, [`crate::gpu::CopyStream::post_u64`]) costs the host a few
/// microseconds, about what walking a few hundred records does, so finer parts would
/// spend the drainer's time on copies rather than records.
fn publish_every(size: u64) -> u64 {
    (size / 4).clamp(8, 1 << 20)
}

/// What one [`LiveRing::drain`] pass did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Pass {
    /// Committed records taken.
    pub(super) records: u64,
    /// Consumer positions published.
    pub(super) publishes: u64,
}

// SAFETY: the pointer is into a `HostBuffer` the loader owns and keeps alive for every use
// (the drain thread is scoped inside `Loader::launch`, which borrows the loader).
unsafe impl Send for LiveRing {}

impl LiveRing {
    pub(super) fn new(data: &HostBuffer, consumer_at: u64, consumer: u64) -> LiveRing {
        let bytes = data.bytes();
        // SAFETY: the host buffer's bytes, alive as long as the loader.
        unsafe {
            LiveRing::from_raw(
                bytes.as_ptr().cast_mut(),
                bytes.len(),
                consumer_at,
                consumer,
            )
        }
    }

    /// # Safety
    ///
    /// `data` points to `len` bytes, 8-aligned, valid (and written only through atomics or
    /// by a device) while the value is used.
    pub(super) unsafe fn from_raw(
        data: *mut u8,
        len: usize,
        consumer_at: u64,
        consumer: u64,
    ) -> LiveRing {
        LiveRing {
            data,
            // The compiler sizes rings as powers of two; a ring of another size (a
            // different module) is not drained live ([`ringbuf::scan_to`] refuses it).
            size: len as u64,
            consumer_at,
            consumer,
            every: publish_every(len as u64),
        }
    }

    /// One pass: takes the committed records from the consumer on, up to the first BUSY or
    /// all-zero header and at most one ring's worth, in parts of [`LiveRing::every`] bytes
    /// ([`ringbuf::scan_to`]); after each part it zeroes the part's bytes, then publishes
    /// the new consumer with `publish(consumer_at, consumer)`, which issues the copy that
    /// carries it to the device (copies land in the order issued). Each header is read with
    /// acquire semantics (the flags were released by `submit`, `.sys`), so the record's
    /// bytes read after it are the ones written before it. A publication that fails ends
    /// the pass with the consumer where it was published last.
    pub(super) fn drain(
        &mut self,
        st: &mut RingState,
        mut publish: impl FnMut(u64, u64) -> Result<(), GpuError>,
    ) -> Result<Pass, GpuError> {
        let mut pass = Pass::default();
        // At most one ring's worth per pass, so the drainer goes on to its other rings.
        let (data, last) = (self.data, self.consumer.saturating_add(self.size));
        let header = |off: u64| {
            // SAFETY: `scan_to` passes 8-aligned offsets below `size`: the header is inside
            // the ring, which is 8-aligned.
            let h = unsafe { &*(data.add(off as usize) as *const AtomicU64) };
            h.load(Ordering::Acquire)
        };
        while st.error.is_none() {
            // No record ends past the consumer published last plus the ring, which the
            // parts before moved: the walk's end is that, not the pass's start plus the
            // ring (a record the producers wrote into a part given back earlier in this
            // pass may cross that).
            let from = self.consumer;
            let end = from.saturating_add(self.size);
            let stop_at = from.saturating_add(self.every).min(last);
            let walk = ringbuf::scan_to(self.size, from, end, stop_at, header, |pos, off, len| {
                // SAFETY: `scan_to` checked that the record lies inside the ring; its bytes
                // were released before the flags acquired above, and nobody writes them
                // until this reader gives them back.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        data.add((off + ringbuf::HEADER_SIZE) as usize),
                        len as usize,
                    )
                };
                st.staged_bytes.extend_from_slice(bytes);
                st.staged.push((pos, len));
                pass.records += 1;
            });
            if let Some(e) = walk.error {
                st.error = Some(e);
            }
            let to = walk.consumer;
            if to == from {
                break;
            }
            // Zero what was consumed (a header reserved there later must read as "not yet
            // written"), then publish the consumer: the zeroing stores are done before the
            // copy that carries it is issued.
            let mut at = from;
            while at < to {
                let off = at % self.size;
                let n = (to - at).min(self.size - off);
                // SAFETY: `off + n <= size`, inside the ring.
                unsafe { std::ptr::write_bytes(data.add(off as usize), 0, n as usize) };
                at += n;
            }
            std::sync::atomic::fence(Ordering::SeqCst);
            publish(self.consumer_at, to)?;
            self.consumer = to;
            pass.publishes += 1;
            // Stopped short of the part's end (an uncommitted record), or one ring walked.
            if to < stop_at || to >= last {
                break;
            }
        }
        Ok(pass)
    }
}

/// The live drainer's loop, run by the thread [`Loader::launch`] starts before the kernel:
/// passes over every ring without sleeping (a pass that found nothing yields the CPU once)
/// until `stop`, each publishing its ring's consumer through `publish` as
/// [`LiveRing::drain`] says; counts what it did. Stops at the first failed publication.
pub(super) fn drain_until(
    live: &mut [LiveRing],
    states: &mut [RingState],
    stop: &AtomicBool,
    mut publish: impl FnMut(u64, u64) -> Result<(), GpuError>,
) -> Result<DrainStats, GpuError> {
    let start = std::time::Instant::now();
    let mut stats = DrainStats::default();
    while !stop.load(Ordering::Acquire) {
        let mut got = 0;
        for (r, st) in live.iter_mut().zip(states.iter_mut()) {
            let pass = r.drain(st, &mut publish)?;
            got += pass.records;
            stats.publishes += pass.publishes;
        }
        stats.passes += 1;
        if got == 0 {
            stats.idle_passes += 1;
            std::thread::yield_now();
            continue;
        }
        let us = u64::try_from(start.elapsed().as_micros()).unwrap_or(u64::MAX);
        if stats.records == 0 {
            stats.first_record_us = us;
        }
        stats.last_record_us = us;
        stats.records += got;
        stats.max_pass_records = stats.max_pass_records.max(got);
    }
    Ok(stats)
}
