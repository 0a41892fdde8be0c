//! Ring output: `ringbuf_output`/`perf_event_output` inlined with the runtime's reservation
//! protocol for a ring and a size the verifier pinned, and `trace_printk`/`trace_vprintk`/
//! `puts`, whose records go to the module's printk ring for the host to format.

use super::frame::Fp;
use super::func::FuncWriter;
use super::mem::ty;
use super::symbols::map_desc_symbol;
use crate::isa::table::{CallKind, Kind, Size};
use bpf2ptx_runtime::{printk, MapKind};
use std::fmt::Write as _;

/// Largest record size (bytes of data) whose `ringbuf_output` is inlined: the copy is
/// straight-line code, one load and store per 8 bytes.
pub(super) const INLINE_RECORD_MAX: u64 = 256;

/// [`FuncWriter::inline_ring_output`]'s code, `@NAME@` filled in: `DESC` the ring's
/// descriptor, `SIZE` the record's data bytes, `T` its bytes in the ring, `MAGIC`
/// ceil(2^32 / T), `RS` the scope of the record side, `COPY` the stores of the data from
/// the frame to `[%rbd6+8..]`, and four labels; the descriptor's words are `@DESC_*@`
/// (`bpf2ptx_runtime::fill_abi`).
/// Registers: %rbd0 data, %rbd1 aux, %rbd2 counters, %rbd3 aux - 1, %rbd4 consumer + aux;
/// %rb0 active mask, %rb2 rank, %rb3 lanes, %rb4 leader lane; %rb5 records taken and
/// %rbd5 their first position, broadcast by the leader.
///
/// In order: an unbound or malformed ring gives -EINVAL (the runtime's test), a size
/// above aux / 2 a counted drop; the leader reads the consumer (acquire: a reader zeroed
/// what it consumed before moving it) and the bound (word 7: the producer plus the claims
/// in flight), and `k0 = min(lanes, room / T)` with `room = consumer + aux - bound`; when
/// `k0 = 0` it claims nothing (a full ring costs two loads); else it claims `k0` records
/// on the bound with one relaxed `atom.add`, keeps `k = min(k0, (consumer + aux - old) /
/// T)` of them (`old`, what the add returned, counts every byte taken or claimed before,
/// once), gives back the `k0 - k` it does not keep, takes `k` records with one acq_rel
/// `atom.add` on the producer and counts the other lanes as drops: the runtime's protocol
/// (`bpf2ptx_runtime::ringbuf`, module doc, "Reserving never blocks") for a group whose
/// lanes all write `T` bytes. Lanes of rank below `k` write their record at `p + rank *
/// T` and publish it with one release store of the header `{SIZE, 0}`; a record that
/// would cross the ring's end becomes two DISCARD padding records and is reserved again
/// through the runtime.
pub(super) const INLINE_RING_OUTPUT: &str = "\t{
	.reg .b32 %rb<8>;
	.reg .b64 %rbd<11>;
	.reg .pred %rbp<3>;
	ld.global.nc.u64 %rbd0, [@DESC@+@DESC_DATA@];
	ld.global.nc.u64 %rbd1, [@DESC@+@DESC_AUX@];
	ld.global.nc.u64 %rbd2, [@DESC@+@DESC_AUX2@];
	cvta.to.global.u64 %rbd0, %rbd0;
	cvta.to.global.u64 %rbd2, %rbd2;
	setp.eq.u64 %rbp0, %rbd0, 0;
	setp.eq.u64 %rbp1, %rbd2, 0;
	or.pred %rbp0, %rbp0, %rbp1;
	setp.lt.u64 %rbp1, %rbd1, 4096;
	or.pred %rbp0, %rbp0, %rbp1;
	setp.gt.u64 %rbp1, %rbd1, 0x100000000;
	or.pred %rbp0, %rbp0, %rbp1;
	add.s64 %rbd3, %rbd1, -1;
	and.b64 %rbd4, %rbd3, %rbd1;
	setp.ne.u64 %rbp1, %rbd4, 0;
	or.pred %rbp0, %rbp0, %rbp1;
	mov.u64 %r0, @EINVAL@;
	@%rbp0 bra @DONE@;
	mov.u64 %r0, @EAGAIN@;
	shr.u64 %rbd4, %rbd1, 1;
	setp.lt.u64 %rbp0, %rbd4, @SIZE@;
	@%rbp0 bra @DROP@;
	activemask.b32 %rb0;
	mov.u32 %rb1, %lanemask_lt;
	and.b32 %rb1, %rb1, %rb0;
	popc.b32 %rb2, %rb1;
	popc.b32 %rb3, %rb0;
	brev.b32 %rb4, %rb0;
	clz.b32 %rb4, %rb4;
	setp.eq.u32 %rbp1, %rb1, 0;
	mov.u32 %rb5, 0;
	mov.u64 %rbd5, 0;
	@!%rbp1 bra @WRITE@_b;
	ld.acquire.gpu.global.u64 %rbd8, [%rbd2+8];
	ld.relaxed.gpu.global.u64 %rbd9, [@DESC@+@DESC_BOUND@];
	add.u64 %rbd4, %rbd8, %rbd1;
	sub.u64 %rbd10, %rbd4, %rbd9;
	setp.le.u64 %rbp0, %rbd9, %rbd4;
	setp.le.u64 %rbp2, %rbd8, %rbd9;
	and.pred %rbp0, %rbp0, %rbp2;
	mul.wide.u32 %rbd6, %rb3, @T@;
	min.u64 %rbd10, %rbd10, %rbd6;
	cvt.u32.u64 %rb5, %rbd10;
	mul.hi.u32 %rb5, %rb5, @MAGIC@;
	selp.u32 %rb5, %rb5, 0, %rbp0;
	setp.eq.u32 %rbp0, %rb5, 0;
	@%rbp0 bra @WRITE@_d;
	mul.wide.u32 %rbd6, %rb5, @T@;
	atom.relaxed.gpu.global.add.u64 %rbd7, [@DESC@+@DESC_BOUND@], %rbd6;
	sub.u64 %rbd10, %rbd4, %rbd7;
	setp.le.u64 %rbp0, %rbd7, %rbd4;
	setp.le.u64 %rbp2, %rbd8, %rbd7;
	and.pred %rbp0, %rbp0, %rbp2;
	min.u64 %rbd10, %rbd10, %rbd6;
	cvt.u32.u64 %rb6, %rbd10;
	mul.hi.u32 %rb6, %rb6, @MAGIC@;
	selp.u32 %rb6, %rb6, 0, %rbp0;
	sub.u32 %rb7, %rb6, %rb5;
	setp.ne.u32 %rbp0, %rb7, 0;
	mul.wide.s32 %rbd10, %rb7, @T@;
	@%rbp0 red.relaxed.gpu.global.add.u64 [@DESC@+@DESC_BOUND@], %rbd10;
	mov.u32 %rb5, %rb6;
	setp.ne.u32 %rbp0, %rb5, 0;
	mul.wide.u32 %rbd10, %rb5, @T@;
	@%rbp0 atom.acq_rel.gpu.global.add.u64 %rbd5, [%rbd2], %rbd10;
@WRITE@_d:
	sub.u32 %rb6, %rb3, %rb5;
	setp.ne.u32 %rbp0, %rb6, 0;
	cvt.u64.u32 %rbd6, %rb6;
	@%rbp0 red.relaxed.gpu.global.add.u64 [@DESC@+@DESC_DROPS@], %rbd6;
@WRITE@_b:
	shfl.sync.idx.b32 %rb5, %rb5, %rb4, 0x1f, %rb0;
	mov.b64 {%rb6, %rb7}, %rbd5;
	shfl.sync.idx.b32 %rb6, %rb6, %rb4, 0x1f, %rb0;
	shfl.sync.idx.b32 %rb7, %rb7, %rb4, 0x1f, %rb0;
	mov.b64 %rbd5, {%rb6, %rb7};
	setp.ge.u32 %rbp0, %rb2, %rb5;
	@%rbp0 bra @DONE@;
	mul.wide.u32 %rbd6, %rb2, @T@;
	add.u64 %rbd6, %rbd6, %rbd5;
	and.b64 %rbd6, %rbd6, %rbd3;
	and.b64 %rbd6, %rbd6, -8;
	add.u64 %rbd7, %rbd6, @T@;
	setp.gt.u64 %rbp0, %rbd7, %rbd1;
	add.u64 %rbd6, %rbd0, %rbd6;
	@%rbp0 bra @PAD@;
@WRITE@:
@COPY@	st.release.@RS@.global.b64 [%rbd6], @SIZE@;
	mov.u64 %r0, 0;
	bra.uni @DONE@;
@PAD@:
	sub.u64 %rbd8, %rbd1, %rbd6;
	add.u64 %rbd8, %rbd8, %rbd0;
	add.u64 %rbd9, %rbd8, -8;
	or.b64 %rbd9, %rbd9, 0x4000000000000000;
	st.relaxed.@RS@.global.b64 [%rbd6], %rbd9;
	sub.u64 %rbd9, @T@, %rbd8;
	add.u64 %rbd9, %rbd9, -8;
	or.b64 %rbd9, %rbd9, 0x4000000000000000;
	st.relaxed.@RS@.global.b64 [%rbd0], %rbd9;
	{
	.param .b64 bpf_ra;
	.param .b64 bpf_rs;
	.param .b64 bpf_rf;
	.param .b64 bpf_rr;
	mov.u64 %rbd9, @DESC@;
	cvta.global.u64 %rbd9, %rbd9;
	st.param.b64 [bpf_ra], %rbd9;
	st.param.b64 [bpf_rs], @SIZE@;
	st.param.b64 [bpf_rf], 0;
	call (bpf_rr), bpf2ptx_ringbuf_reserve, (bpf_ra, bpf_rs, bpf_rf);
	ld.param.b64 %rbd6, [bpf_rr];
	}
	setp.eq.u64 %rbp0, %rbd6, 0;
	@%rbp0 bra @DONE@;
	add.u64 %rbd6, %rbd6, -8;
	bra.uni @WRITE@;
@DROP@:
	red.relaxed.gpu.global.add.u64 [@DESC@+@DESC_DROPS@], 1;
@DONE@:
	}
";

/// Bytes of the module's `trace_printk`/`puts` ring ([`printk::RING_BYTES`]).
pub(super) const PRINTK_RING: u64 = printk::RING_BYTES;
/// The descriptor symbol of the `trace_printk`/`puts` ring ([`printk::DESC_SYMBOL`]).
pub const PRINTK_DESC: &str = printk::DESC_SYMBOL;
/// Bytes of one printk record ([`printk::RECORD_BYTES`]; its words: [`printk::Word`]).
pub const PRINTK_RECORD: u64 = printk::RECORD_BYTES;

impl FuncWriter<'_> {
    /// The ring, record size and frame slot of instruction `i` when it is a
    /// `ringbuf_output` (or `perf_event_output`) that [`FuncWriter::inline_ring_output`]
    /// inlines: the verifier pinned the map and the size, and the data is a whole range of
    /// this frame starting 8-aligned, so its words are copied from the frame's registers.
    pub(super) fn ring_output_args(
        &self,
        i: usize,
        fp: &[Fp; 11],
        frame: u32,
    ) -> Option<(u32, u64, i64)> {
        let ins = self.prog.insns.get(i)?;
        if ins.kind() != Kind::Call(CallKind::Helper)
            || !(bpf2ptx_runtime::is_helper(ins.imm, "ringbuf_output")
                || bpf2ptx_runtime::is_helper(ins.imm, "perf_event_output"))
        {
            return None;
        }
        // The data's register: the prototype's memory argument (r2 of ringbuf_output, r4
        // of perf_event_output).
        let data = bpf2ptx_runtime::helper(ins.imm)?
            .args
            .iter()
            .position(|a| matches!(a, bpf2ptx_runtime::Arg::Mem { .. }))?
            + 1;
        let h = self.facts;
        let m = h.call_map.get(i).copied().flatten()?;
        let size = h.call_size.get(i).copied().flatten()?;
        let map = self.obj.maps.get(m as usize)?;
        let Fp::At(k) = fp[data] else {
            return None;
        };
        let slot = i64::from(frame) + k;
        (map.is(MapKind::is_ring)
            && (1..=INLINE_RECORD_MAX).contains(&size)
            && slot >= 0
            && slot % 8 == 0
            && slot + size as i64 <= i64::from(frame))
        .then_some((m, size, slot))
    }

    /// `ringbuf_output(ring, data, size, flags)` (or `perf_event_output`) inlined for a ring
    /// and a size the verifier pinned: the runtime's reservation protocol (specs/abi.md;
    /// `bpf2ptx_ringbuf_reserve`) with everything a call site knows folded in. Every active
    /// lane reserves the same size on the same ring, so the warp's leader reads the
    /// consumer and the bound, claims as many whole records as seem to fit on the bound,
    /// keeps those that fit below what the claim returned, gives the rest back and takes the
    /// kept ones with one `atom.add` on the producer; each taking lane
    /// writes its record from the frame's registers and publishes it with one release
    /// store of its header `{size, 0}` (a reader stops at a header that is all zeros, so no
    /// BUSY header is needed first). The lanes that did not fit are counted as drops by the
    /// leader. A record that would cross the ring's end becomes padding and that lane
    /// reserves again through the runtime (once per wrap). Returns false, emitting nothing,
    /// when the call does not qualify.
    pub(super) fn inline_ring_output(&mut self, fp: &[Fp; 11], frame: u32) -> bool {
        let Some((m, size, slot)) = self.ring_output_args(self.cur, fp, frame) else {
            return false;
        };
        let map = &self.obj.maps[m as usize];
        let t = bpf2ptx_runtime::ringbuf::record_size(size);
        // Records are published for the reader of the ring's bytes: the host while the
        // kernel runs when it is placed there. The counters and the claim stay in device
        // memory (.gpu) either way.
        let rs = if self.host.get(m as usize).copied().unwrap_or(false) {
            "sys"
        } else {
            "gpu"
        };
        // The data's stores, written aside: straight from the frame's registers.
        let outer = std::mem::take(&mut self.out);
        let mut off = 0u64;
        while off < size {
            let n = match size - off {
                8.. => Size::DW,
                4..=7 => Size::W,
                2 | 3 => Size::H,
                _ => Size::B,
            };
            self.local_load("%rbd8", false, slot + off as i64, n, false);
            self.l(format!("st.global.{} [%rbd6+{}], %rbd8;", ty(n), 8 + off));
            off += u64::from(n.bytes());
        }
        let copy = std::mem::replace(&mut self.out, outer);
        let labels = [
            self.fresh_label(),
            self.fresh_label(),
            self.fresh_label(),
            self.fresh_label(),
        ];
        self.ptx_62 = true;
        // The descriptor: the module's own, at a constant address, or under
        // `rebind_maps` the one its reference word names (the ring's claim state, words 6
        // and 7, is shared with every module sharing the ring), as a global address.
        let rebound = self.rebind && super::has_map_ref(map);
        let desc = if rebound {
            "%rbref".to_string()
        } else {
            map_desc_symbol(&map.name)
        };
        let fields: [(&str, String); 12] = [
            ("DESC", desc),
            ("SIZE", size.to_string()),
            ("T", t.to_string()),
            // k = floor(x / t) for x <= 32 t as mul.hi by ceil(2^32 / t): exact while
            // 32 t^2 < 2^32 (t <= INLINE_RECORD_MAX + 8 keeps it so).
            ("MAGIC", (1u64 << 32).div_ceil(t).to_string()),
            ("RS", rs.to_string()),
            ("EINVAL", bpf2ptx_runtime::ringbuf::EINVAL.to_string()),
            ("EAGAIN", bpf2ptx_runtime::ringbuf::EAGAIN.to_string()),
            ("COPY", copy),
            ("DONE", labels[0].clone()),
            ("WRITE", labels[1].clone()),
            ("PAD", labels[2].clone()),
            ("DROP", labels[3].clone()),
        ];
        let mut text = bpf2ptx_runtime::fill_abi(INLINE_RING_OUTPUT);
        for (k, v) in &fields {
            text = text.replace(&format!("@{k}@"), v);
        }
        if rebound {
            let _ = writeln!(
                self.out,
                "\t{{\n\t.reg .b64 %rbref;\n\tld.global.nc.u64 %rbref, [{}];\n\tcvta.to.global.u64 %rbref, %rbref;",
                super::map_ref_symbol(&map.name)
            );
            self.out.push_str(&text);
            self.out.push_str("\t}\n");
        } else {
            self.out.push_str(&text);
        }
        true
    }

    /// `trace_printk(fmt, size, a, b, c)` / `puts(str)`: a 48-byte record in the module's
    /// printk ring (kind, address, size, three arguments) that the host formats; a full
    /// ring drops the line. r0 = 0.
    pub(super) fn printk(&mut self, puts: bool) {
        let done = self.printk_reserve(&PRINTK_RECORD.to_string());
        // The record (printk::Word): kind, format (r1), then the format size and the
        // three arguments (r2-r5) of trace_printk, or zeros for puts.
        use printk::Word;
        let kind = if puts {
            printk::KIND_PUTS
        } else {
            printk::KIND_TRACE_PRINTK
        };
        self.l(format!(
            "st.u64 {}, {kind};",
            printk_at(Word::Kind.offset())
        ));
        self.l(format!("st.u64 {}, %r1;", printk_at(Word::Format.offset())));
        for (w, reg) in [
            (Word::FormatSize, "%r2"),
            (Word::Arg0, "%r3"),
            (Word::Arg1, "%r4"),
            (Word::Arg2, "%r5"),
        ] {
            self.l(format!(
                "st.u64 {}, {};",
                printk_at(w.offset()),
                if puts { "0" } else { reg }
            ));
        }
        self.printk_submit(&done);
    }

    /// `trace_vprintk(fmt, size, data, data_len)`: a record of
    /// `printk::vargs_record_bytes(n)` bytes in the printk ring (kind, address, size, the
    /// count n = data_len / 8, then the n words of `data`) that the host formats; a full
    /// ring drops the line. r0 = 0. The verifier proved data_len a constant multiple of 8
    /// of at most `8 * printk::MAX_ARGS` and `data_len` bytes at r3 readable; the length
    /// is clamped to that here as well, so the copy never reads past what was proved.
    pub(super) fn vprintk(&mut self) {
        use printk::Word;
        let max = 8 * printk::MAX_ARGS as u64;
        let header = printk::vargs_record_bytes(0);
        self.l(format!("min.u64 %t2, %r4, {max};"));
        self.l("and.b64 %t2, %t2, -8;");
        self.l(format!("add.u64 %t3, %t2, {header};"));
        let done = self.printk_reserve("%t3");
        self.l(format!(
            "st.u64 {}, {};",
            printk_at(Word::Kind.offset()),
            printk::KIND_TRACE_VPRINTK
        ));
        self.l(format!("st.u64 {}, %r1;", printk_at(Word::Format.offset())));
        self.l(format!(
            "st.u64 {}, %r2;",
            printk_at(Word::FormatSize.offset())
        ));
        self.l("shr.u64 %t3, %t2, 3;");
        self.l(format!(
            "st.u64 {}, %t3;",
            printk_at(printk::VARGS_COUNT.offset())
        ));
        // The copy of %t2 bytes from r3 to the record's arguments (8-aligned): by words
        // when r3 is 8-aligned (clang's u64 array on the stack), else byte by byte.
        let [bytes, end] = [self.fresh_label(), self.fresh_label()];
        let words = self.fresh_label();
        self.l("{");
        self.l(".reg .b64 %vd<4>;");
        self.l(".reg .b32 %vw;");
        self.l(".reg .pred %vq;");
        self.l(format!("add.u64 %vd0, %t1, {header};"));
        self.l("mov.u64 %vd1, %r3;");
        self.l("mov.u64 %vd2, %t2;");
        self.l("and.b64 %vd3, %vd1, 7;");
        self.l("setp.ne.u64 %vq, %vd3, 0;");
        self.l(format!("@%vq bra {bytes};"));
        let _ = writeln!(self.out, "{words}:");
        self.l("setp.eq.u64 %vq, %vd2, 0;");
        self.l(format!("@%vq bra {end};"));
        self.l("ld.u64 %vd3, [%vd1];");
        self.l("st.u64 [%vd0], %vd3;");
        self.l("add.u64 %vd0, %vd0, 8;");
        self.l("add.u64 %vd1, %vd1, 8;");
        self.l("add.u64 %vd2, %vd2, -8;");
        self.l(format!("bra {words};"));
        let _ = writeln!(self.out, "{bytes}:");
        self.l("setp.eq.u64 %vq, %vd2, 0;");
        self.l(format!("@%vq bra {end};"));
        self.l("ld.u8 %vw, [%vd1];");
        self.l("st.u8 [%vd0], %vw;");
        self.l("add.u64 %vd0, %vd0, 1;");
        self.l("add.u64 %vd1, %vd1, 1;");
        self.l("add.u64 %vd2, %vd2, -1;");
        self.l(format!("bra {bytes};"));
        let _ = writeln!(self.out, "{end}:");
        self.l("}");
        self.printk_submit(&done);
    }

    /// Reserves a printk record of `size` bytes (an immediate or a register) into %t1 and
    /// branches to the returned label when the ring is full.
    fn printk_reserve(&mut self, size: &str) -> String {
        self.l("{");
        self.l(".param .b64 bpf_pd;");
        self.l(format!("mov.u64 %t0, {PRINTK_DESC};"));
        self.l("cvta.global.u64 %t0, %t0;");
        self.l("st.param.b64 [bpf_pd], %t0;");
        self.l(".param .b64 bpf_ps;");
        self.l(format!("st.param.b64 [bpf_ps], {size};"));
        self.l(".param .b64 bpf_pf;");
        self.l("st.param.b64 [bpf_pf], 0;");
        self.l(".param .b64 bpf_pr;");
        self.l("call.uni (bpf_pr), bpf2ptx_ringbuf_reserve, (bpf_pd, bpf_ps, bpf_pf);");
        self.l("ld.param.b64 %t1, [bpf_pr];");
        self.l("}");
        let done = self.fresh_label();
        self.l("setp.eq.u64 %p1, %t1, 0;");
        self.l(format!("@%p1 bra {done};"));
        done
    }

    /// Submits the printk record at %t1; `done` (from [`Self::printk_reserve`]) follows,
    /// then r0 = 0.
    fn printk_submit(&mut self, done: &str) {
        self.l("{");
        self.l(".param .b64 bpf_pa;");
        self.l("st.param.b64 [bpf_pa], %t1;");
        self.l(".param .b64 bpf_pg;");
        self.l("st.param.b64 [bpf_pg], 0;");
        self.l("call.uni bpf2ptx_ringbuf_submit, (bpf_pa, bpf_pg);");
        self.l("}");
        let _ = writeln!(self.out, "{done}:");
        self.l("mov.u64 %r0, 0;");
    }
}

/// The operand of the printk record's word at byte offset `o` (the record is at %t1).
fn printk_at(o: u64) -> String {
    match o {
        0 => "[%t1]".to_string(),
        o => format!("[%t1+{o}]"),
    }
}
