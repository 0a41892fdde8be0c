//! Loads and stores: frame slots (`.local` memory, or the registers a promoted frame lives
//! in), context fields an attach site passes in registers, and generic or global accesses
//! with their run-time alignment test and the byte-wise runtime helpers behind it.

use super::frame::{folded, Fp};
use super::func::FuncWriter;
use super::module::INLINE_CTX_WORDS;
use crate::isa::table::Size;
use std::fmt::Write as _;

pub(super) fn ty(size: Size) -> &'static str {
    match size {
        Size::B => "u8",
        Size::H => "u16",
        Size::W => "u32",
        Size::DW => "u64",
    }
}

/// Runtime helper functions the lowering calls: unaligned loads and stores.
pub(super) fn runtime_decl(name: &str) -> String {
    if name.starts_with("bpf2ptx_ldu") {
        format!(".func (.param .b64 v) {name}(.param .b64 a);")
    } else {
        format!(".func {name}(.param .b64 a, .param .b64 v);")
    }
}

pub(super) fn runtime_body(name: &str) -> String {
    // The access size is the name's trailing digits (`bpf2ptx_ldu4` → 4).
    let bytes: u32 = name
        .rsplit(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|d| d.parse().ok())
        .expect("runtime helper names end in their size");
    let mut b = String::new();
    if name.starts_with("bpf2ptx_ldu") {
        let _ = writeln!(b, ".func (.param .b64 v) {name}(.param .b64 a)\n{{\n\t.reg .b64 %x<4>;\n\t.reg .b16 %h;\n\tld.param.u64 %x0, [a];\n\tmov.u64 %x1, 0;");
        for i in (0..bytes).rev() {
            let _ = writeln!(b, "\tld.u8 %h, [%x0+{i}];\n\tcvt.u64.u16 %x2, %h;\n\tshl.b64 %x1, %x1, 8;\n\tor.b64 %x1, %x1, %x2;");
        }
        let _ = writeln!(b, "\tst.param.b64 [v], %x1;\n\tret;\n}}\n");
    } else {
        let _ = writeln!(b, ".func {name}(.param .b64 a, .param .b64 v)\n{{\n\t.reg .b64 %x<4>;\n\t.reg .b16 %h;\n\tld.param.u64 %x0, [a];\n\tld.param.u64 %x1, [v];");
        for i in 0..bytes {
            let _ = writeln!(
                b,
                "\tcvt.u16.u64 %h, %x1;\n\tst.u8 [%x0+{i}], %h;\n\tshr.u64 %x1, %x1, 8;"
            );
        }
        let _ = writeln!(b, "\tret;\n}}\n");
    }
    b
}

impl FuncWriter<'_> {
    /// In an inlined body, a context load at a constant offset reads the site's context
    /// registers `%bpf2ptx_c0..` (8 bytes each, little-endian like the struct), so the
    /// fields an attach site knows at build time are constants ptxas folds. Returns false
    /// when the load is not such a field.
    pub(super) fn ctx_field(&mut self, d: u8, size: Size, signed: bool) -> bool {
        let Some(off) = self.facts.ctx_offset.get(self.cur).copied().flatten() else {
            return false;
        };
        let bytes = i64::from(size.bytes());
        if off < 0 || off % 8 + bytes > 8 || off + bytes > i64::from(INLINE_CTX_WORDS) * 8 {
            return false;
        }
        let (w, shift) = (off / 8, (off % 8) * 8);
        if bytes == 8 {
            self.l(format!("mov.b64 %r{d}, %bpf2ptx_c{w};"));
        } else {
            let t = if signed { "s64" } else { "u64" };
            self.l(format!(
                "bfe.{t} %r{d}, %bpf2ptx_c{w}, {shift}, {};",
                bytes * 8
            ));
        }
        true
    }

    /// Reads `size` bytes of the frame at `slot` into `reg` (a .b64 register, or a .b32 one
    /// when `reg32`), zero- or sign-extended.
    pub(super) fn local_load(
        &mut self,
        reg: &str,
        reg32: bool,
        slot: i64,
        size: Size,
        signed: bool,
    ) {
        if !self.promote {
            let t = match (reg32, signed) {
                (true, _) => "u32".to_string(),
                (false, true) => ty(size).replace('u', "s"),
                (false, false) => ty(size).to_string(),
            };
            self.l(format!("ld.local.{t} {reg}, [bpf_stack+{slot}];"));
            return;
        }
        let (s, bit, n) = (slot / 8, (slot % 8) * 8, size.bytes() * 8);
        let wide = if reg32 { "%t2" } else { reg };
        if n == 64 {
            self.l(format!("mov.b64 {wide}, %s{s};"));
        } else {
            self.l(format!(
                "bfe.{} {wide}, %s{s}, {bit}, {n};",
                if signed { "s64" } else { "u64" }
            ));
        }
        if reg32 {
            self.l(format!("cvt.u32.u64 {reg}, %t2;"));
        }
    }

    /// Writes the low `size` bytes of `val` (.b64, or .b32 when `val32`) to the frame.
    pub(super) fn local_store(&mut self, slot: i64, size: Size, val: &str, val32: bool) {
        if !self.promote {
            let t = if val32 { "u32" } else { ty(size) };
            self.l(format!("st.local.{t} [bpf_stack+{slot}], {val};"));
            return;
        }
        let (s, bit, n) = (slot / 8, (slot % 8) * 8, size.bytes() * 8);
        let wide = if val32 {
            self.l(format!("cvt.u64.u32 %t2, {val};"));
            "%t2"
        } else {
            val
        };
        if n == 64 {
            self.l(format!("mov.b64 %s{s}, {wide};"));
        } else {
            self.l(format!("bfi.b64 %s{s}, {wide}, %s{s}, {bit}, {n};"));
        }
    }

    /// The state space and address register of an access through `base`: global memory
    /// (converted from the generic address) where the verifier proved it, else generic.
    /// The byte-wise fallback helpers take generic addresses, so they get `%r{base}`
    /// through `%t1` either way (a global address is a valid generic one on the GPU).
    fn address(&mut self, base: u8) -> (&'static str, String) {
        if self.proven_global() {
            self.l(format!("cvta.to.global.u64 %t0, %r{base};"));
            (".global", "%t0".to_string())
        } else {
            ("", format!("%r{base}"))
        }
    }

    /// A load into `val` (a .b64 register), zero- or sign-extended.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn load(
        &mut self,
        size: Size,
        signed: bool,
        base: u8,
        off: i16,
        fp: &[Fp; 11],
        frame: u32,
        val: &str,
    ) {
        let t = if signed {
            ty(size).replace('u', "s")
        } else {
            ty(size).to_string()
        };
        if let Some(slot) = folded(fp, base, off, size, frame) {
            self.local_load(val, false, slot, size, signed);
            return;
        }
        let (space, addr) = self.address(base);
        if size == Size::B || self.proven_aligned() {
            self.l(format!("ld{space}.{t} {val}, [{addr}+{off}];"));
            return;
        }
        let n = size.bytes();
        let done = self.alignment_test(
            base,
            off,
            n,
            &format!("ld{space}.{t} {val}, [{addr}+{off}]"),
        );
        let f = format!("bpf2ptx_ldu{n}");
        self.need.insert(f.clone());
        self.l("{");
        self.l(".param .b64 bpf_ua;");
        self.l("st.param.b64 [bpf_ua], %t1;");
        self.l(".param .b64 bpf_uv;");
        self.l(format!("call.uni (bpf_uv), {f}, (bpf_ua);"));
        self.l(format!("ld.param.b64 {val}, [bpf_uv];"));
        if signed {
            self.l(format!("bfe.s64 {val}, {val}, 0, {};", n * 8));
        }
        self.l("}");
        let _ = writeln!(self.out, "{done}:");
    }

    /// The run-time alignment test of an `n`-byte access at `%r{base} + off`: when aligned,
    /// `access` runs and control jumps to the returned label; otherwise the caller's
    /// byte-wise fallback (which finds the generic address in `%t1`) follows, then the label.
    fn alignment_test(&mut self, base: u8, off: i16, n: u32, access: &str) -> String {
        self.l(format!("add.u64 %t1, %r{base}, {off};"));
        self.l(format!("and.b64 %t2, %t1, {};", n - 1));
        self.l("setp.eq.u64 %p0, %t2, 0;");
        let done = self.fresh_label();
        self.l(format!("@%p0 {access};"));
        self.l(format!("@%p0 bra {done};"));
        done
    }

    pub(super) fn store(
        &mut self,
        size: Size,
        base: u8,
        off: i16,
        fp: &[Fp; 11],
        frame: u32,
        val: &str,
    ) {
        let t = ty(size);
        if let Some(slot) = folded(fp, base, off, size, frame) {
            self.local_store(slot, size, val, false);
            return;
        }
        let (space, addr) = self.address(base);
        if size == Size::B || self.proven_aligned() {
            self.l(format!("st{space}.{t} [{addr}+{off}], {val};"));
            return;
        }
        let n = size.bytes();
        let done = self.alignment_test(
            base,
            off,
            n,
            &format!("st{space}.{t} [{addr}+{off}], {val}"),
        );
        let f = format!("bpf2ptx_stu{n}");
        self.need.insert(f.clone());
        self.l("{");
        self.l(".param .b64 bpf_ua;");
        self.l("st.param.b64 [bpf_ua], %t1;");
        self.l(".param .b64 bpf_uv;");
        self.l(format!("st.param.b64 [bpf_uv], {val};"));
        self.l(format!("call.uni {f}, (bpf_ua, bpf_uv);"));
        self.l("}");
        let _ = writeln!(self.out, "{done}:");
    }
}
