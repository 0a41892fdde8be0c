//! `bpf_snprintf` (165) lowered for its constant format: the verifier proved the format
//! (`Facts::snprintf`), so it is parsed here again by the same parser
//! ([`bpf2ptx_runtime::snprintf::parse`]) and each piece becomes code: a literal becomes
//! predicated byte stores, a conversion a call of a runtime formatting function
//! ([`bpf2ptx_runtime::snprintf::FUNCTIONS`]) with its spec word as an immediate. No
//! format is interpreted at run time.
//!
//! Registers of the sequence (a block of its own): `%snd0` the output (r1), `%snd1` its
//! capacity (`str_size - 1`, or 0 for an empty buffer), `%snd2` the untruncated length so
//! far, `%snd3` scratch. The output is always ended by `bpf2ptx_fmt_end` (NUL and zeros
//! to `str_size`), and r0 is the length plus 1, as Linux returns.

use super::func::FuncWriter;
use super::Error;
use bpf2ptx_runtime::snprintf::{parse, Kind, Piece};
use std::fmt::Write as _;

impl FuncWriter<'_> {
    /// The call at instruction `i` (slot `pc`).
    pub(super) fn snprintf(&mut self, i: usize, pc: usize) -> Result<(), Error> {
        let unsupported = |why| Error::Unsupported {
            program: self.prog.name.clone(),
            pc,
            insn: self.prog.insns[i].to_string(),
            why,
        };
        let call = self.facts.snprintf[i]
            .clone()
            .ok_or_else(|| unsupported("bpf_snprintf whose format the verifier did not pin"))?;
        let init = self.obj.maps[call.fmt_map as usize]
            .init
            .as_deref()
            .unwrap_or(&[]);
        // The verifier parsed the same bytes with the data's word count; every
        // conversion it accepted has an argument, so the most words is enough here.
        let format = parse(
            init.get(call.fmt_offset as usize..).unwrap_or(&[]),
            bpf2ptx_runtime::snprintf::MAX_ARGS,
        )
        .map_err(|_| unsupported("bpf_snprintf whose format does not parse"))?;
        self.need.insert("snprintf".into());
        self.l("{");
        self.l(".reg .b64 %snd<4>;");
        self.l(".reg .pred %snq;");
        self.l(".reg .b32 %snw;");
        self.l("mov.u64 %snd0, %r1;");
        // str_size is a u32 (the verifier bounded r2 below 2^32 with the buffer).
        self.l("and.b64 %snd3, %r2, 4294967295;");
        self.l("setp.eq.u64 %snq, %snd3, 0;");
        self.l("add.u64 %snd1, %snd3, -1;");
        self.l("selp.b64 %snd1, 0, %snd1, %snq;");
        self.l("mov.u64 %snd2, 0;");
        for piece in format.pieces() {
            match piece {
                Piece::Literal(bytes) => self.fmt_literal(bytes),
                Piece::Conv(c) => {
                    self.fmt_call("bpf2ptx_fmt_load", &[&format!("{}", 8 * c.arg)], true);
                    let spec = c.spec_word().to_string();
                    match c.kind {
                        Kind::Int { long, signed, .. } => {
                            if !long {
                                self.l("cvt.u32.u64 %snw, %snd3;");
                                let ext = if signed { "s" } else { "u" };
                                self.l(format!("cvt.{ext}64.{ext}32 %snd3, %snw;"));
                            }
                            self.fmt_call("bpf2ptx_fmt_int", &["%snd3", &spec], false);
                        }
                        Kind::Char => self.fmt_call("bpf2ptx_fmt_char", &["%snd3", &spec], false),
                        Kind::Str => {
                            let max = call
                                .str_max
                                .iter()
                                .find(|(a, _)| *a == c.arg)
                                .map(|(_, n)| *n)
                                .ok_or_else(|| unsupported("bpf_snprintf %s without a bound"))?;
                            let max = max.to_string();
                            self.fmt_call("bpf2ptx_fmt_str", &["%snd3", &max, &spec], false);
                        }
                    }
                }
            }
        }
        self.l("{");
        self.l(".param .b64 sn_out;");
        self.l(".param .b64 sn_size;");
        self.l(".param .b64 sn_len;");
        self.l("st.param.b64 [sn_out], %snd0;");
        self.l("and.b64 %snd3, %r2, 4294967295;");
        self.l("st.param.b64 [sn_size], %snd3;");
        self.l("st.param.b64 [sn_len], %snd2;");
        self.l("call.uni bpf2ptx_fmt_end, (sn_out, sn_size, sn_len);");
        self.l("}");
        self.l("add.u64 %r0, %snd2, 1;");
        self.l("}");
        Ok(())
    }

    /// Literal bytes at the current length: each stored only if it falls below the
    /// capacity (%snd3 = the bytes left there), then the length moves past all of them.
    fn fmt_literal(&mut self, bytes: &[u8]) {
        self.l("min.u64 %snd3, %snd2, %snd1;");
        self.l("sub.u64 %snd3, %snd1, %snd3;");
        let base = "%snd0";
        self.l(format!("add.u64 {base}, {base}, %snd2;"));
        for (k, b) in bytes.iter().enumerate() {
            self.l(format!("setp.gt.u64 %snq, %snd3, {k};"));
            self.l(format!("@%snq st.u8 [{base}+{k}], {b};"));
        }
        self.l(format!("sub.u64 {base}, {base}, %snd2;"));
        self.l(format!("add.u64 %snd2, %snd2, {};", bytes.len()));
    }

    /// A call of formatting function `f`. `bpf2ptx_fmt_load` (`load`) takes the data
    /// pointer r4 plus the byte offset in `args[0]` and leaves the word in %snd3; the
    /// others take (out, cap, len, args...) and leave the new length in %snd2. An
    /// argument that is a number is passed as `.b32` when it is the last (the spec word),
    /// else as `.b64`.
    fn fmt_call(&mut self, f: &str, args: &[&str], load: bool) {
        self.l("{");
        let mut names = Vec::new();
        let mut param = |me: &mut Self, ty: &str, v: &str| {
            let name = format!("sn_a{}", names.len());
            me.l(format!(".param .{ty} {name};"));
            me.l(format!("st.param.{ty} [{name}], {v};"));
            names.push(name);
        };
        if load {
            self.l(format!("add.u64 %snd3, %r4, {};", args[0]));
            param(self, "b64", "%snd3");
        } else {
            for r in ["%snd0", "%snd1", "%snd2"] {
                param(self, "b64", r);
            }
            for (k, a) in args.iter().enumerate() {
                let ty = if k + 1 == args.len() { "b32" } else { "b64" };
                param(self, ty, a);
            }
        }
        self.l(".param .b64 sn_ret;");
        let _ = writeln!(
            self.out,
            "\tcall.uni (sn_ret), {f}, ({});",
            names.join(", ")
        );
        let dst = if load { "%snd3" } else { "%snd2" };
        self.l(format!("ld.param.b64 {dst}, [sn_ret];"));
        self.l("}");
    }
}
