//! `trace_printk`, `trace_vprintk` and `puts` on the host: the printk ring read back
//! ([`Loader::printk`]), its records decoded and their formats applied ([`format_printk`]).

use super::drain::{collect, RingState};
use super::{word, Loader, LoaderError};
use bpf2ptx_backend::back::ptx::{map_symbol, PRINTK_DESC};
use bpf2ptx_compiler::isa::table::{CallKind, Kind};
use bpf2ptx_compiler::program::MapOrigin;
use bpf2ptx_runtime::desc;
use bpf2ptx_runtime::printk::{self, Word};

impl Loader<'_> {
    /// The lines `trace_printk`, `trace_vprintk` and `puts` wrote, formatted on the host:
    /// each record holds the address of its format (or string) in a read-only global-data
    /// map and its arguments.
    pub fn printk(&self) -> Result<Vec<String>, LoaderError> {
        let (gpu, module, obj) = (self.gpu, self.module, self.obj);
        // Only modules whose programs print have the printk ring; asking the driver for a
        // symbol it lacks is harmless but is an API error to compute-sanitizer.
        let prints = prints(obj);
        if !prints {
            return Ok(Vec::new());
        }
        let Some((d, _)) = gpu.global(module, PRINTK_DESC)? else {
            return Ok(Vec::new());
        };
        let mut st = RingState::default();
        collect(gpu, &gpu.read(d, desc::BYTES as usize)?, &mut st)?;
        // Where each global-data map lives on the device, to turn addresses into strings.
        let mut bases = Vec::new();
        for m in obj
            .maps
            .iter()
            .filter(|m| m.origin == MapOrigin::GlobalData)
        {
            if let (Some((p, size)), Some(init)) =
                (gpu.global(module, &map_symbol(&m.name))?, &m.init)
            {
                bases.push((p, size as u64, init.clone()));
            }
        }
        let lines = st
            .records
            .iter()
            .map(|r| printk_line(&r.data, &bases))
            .collect();
        Ok(lines)
    }
}

/// Whether any program of `obj` calls a printk helper: only then does its module have the
/// printk ring (asking the driver for a symbol it lacks is an API error to
/// compute-sanitizer).
pub fn prints(obj: &bpf2ptx_compiler::program::Object) -> bool {
    obj.programs.iter().flat_map(|p| &p.insns).any(|i| {
        i.kind() == Kind::Call(CallKind::Helper)
            && matches!(
                bpf2ptx_runtime::helper(i.imm).map(|h| h.lowering),
                Some(bpf2ptx_runtime::Lowering::Printk { .. })
            )
    })
}

/// The line of printk record `data` (its newline trimmed), its format or string read from
/// `bases`: per read-only global-data map, its device address, size and initial bytes.
pub fn printk_line(data: &[u8], bases: &[(u64, u64, Vec<u8>)]) -> String {
    let string_at = |addr: u64, max: u64| -> String {
        for (p, size, init) in bases {
            if (*p..p + size).contains(&addr) {
                let off = (addr - p) as usize;
                let end = init.len().min(off.saturating_add(max as usize));
                let bytes = &init[off.min(end)..end];
                let bytes = bytes.split(|&b| b == 0).next().unwrap_or(&[]);
                return String::from_utf8_lossy(bytes).into_owned();
            }
        }
        format!("<string at 0x{addr:x}>")
    };
    decode(data, &string_at).trim_end_matches('\n').to_string()
}

/// One printk record's line (`data`: the record's bytes, [`printk::Word`]), its format or
/// string found by `string_at(address, max bytes)`; None for a record too short for its
/// kind.
pub(super) fn decode(data: &[u8], string_at: &dyn Fn(u64, u64) -> String) -> String {
    let w = |k: usize| word(data, k);
    let fixed = data.len() >= printk::RECORD_BYTES as usize;
    let header = data.len() >= printk::vargs_record_bytes(0) as usize;
    match (header, w(Word::Kind as usize)) {
        (true, printk::KIND_TRACE_VPRINTK) => {
            let n = w(printk::VARGS_COUNT as usize) as usize;
            if n > printk::MAX_ARGS || data.len() < printk::vargs_record_bytes(n) as usize {
                return malformed(data);
            }
            let args: Vec<u64> = (0..n).map(|k| w(printk::VARGS_HEADER_WORDS + k)).collect();
            let fmt = string_at(w(Word::Format as usize), w(Word::FormatSize as usize));
            format_printk(&fmt, &args)
        }
        _ if !fixed => malformed(data),
        (_, printk::KIND_PUTS) => string_at(w(Word::Format as usize), 4096),
        _ => format_printk(
            &string_at(w(Word::Format as usize), w(Word::FormatSize as usize)),
            &[
                w(Word::Arg0 as usize),
                w(Word::Arg1 as usize),
                w(Word::Arg2 as usize),
            ],
        ),
    }
}

/// The line for a printk record that does not decode (shorter than its kind's layout, or
/// more arguments than a record holds): shown, not dropped, so that nothing the ring
/// delivered disappears without a trace.
fn malformed(data: &[u8]) -> String {
    format!(
        "<printk record of {} bytes that does not decode (kind {})>",
        data.len(),
        word(data, Word::Kind as usize)
    )
}

/// A small printf for `trace_printk` and `trace_vprintk` formats: `%d %i %u %x %X %o %p %c
/// %%` with `l`, `ll`, `h` and `hh` lengths, flags, width; the arguments in order (three
/// for `trace_printk`, up to [`printk::MAX_ARGS`] for `trace_vprintk`, as in Linux), 0 for
/// a conversion past the last.
pub fn format_printk(fmt: &str, args: &[u64]) -> String {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut next = args.iter().copied();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = String::new();
        while let Some(&f) = it.peek() {
            if "-+ 0#".contains(f) || f.is_ascii_digit() {
                spec.push(f);
                it.next();
            } else {
                break;
            }
        }
        let mut long = 0;
        let mut short = 0;
        while let Some(&l) = it.peek() {
            match l {
                'l' => long += 1,
                'h' => short += 1,
                _ => break,
            }
            it.next();
        }
        let Some(conv) = it.next() else { break };
        if conv == '%' {
            out.push('%');
            continue;
        }
        let v = next.next().unwrap_or(0);
        let (bits, width) = match (long, short) {
            (0, 0) => (
                32,
                spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                    .parse::<usize>()
                    .unwrap_or(0),
            ),
            (0, 1) => (16, 0),
            (0, _) => (8, 0),
            _ => (64, 0),
        };
        let width = if width == 0 {
            spec.trim_start_matches(['-', '+', ' ', '#', '0'])
                .parse::<usize>()
                .unwrap_or(0)
        } else {
            width
        };
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        let u = v & mask;
        let signed = if bits == 64 {
            u as i64
        } else if u >> (bits - 1) & 1 == 1 {
            (u | !mask) as i64
        } else {
            u as i64
        };
        let text = match conv {
            'd' | 'i' => signed.to_string(),
            'u' => u.to_string(),
            'x' => format!("{u:x}"),
            'X' => format!("{u:X}"),
            'o' => format!("{u:o}"),
            'p' => format!("0x{v:x}"),
            'c' => char::from(u as u8).to_string(),
            other => format!("%{other}"),
        };
        let pad = if spec.starts_with('0') { '0' } else { ' ' };
        if spec.starts_with('-') {
            out.push_str(&format!("{text:<width$}"));
        } else if text.len() < width {
            out.extend(std::iter::repeat_n(pad, width - text.len()));
            out.push_str(&text);
        } else {
            out.push_str(&text);
        }
    }
    out
}
