//! `trace_printk` and `puts` on the host: the printk ring read back ([`Loader::printk`])
//! and its formats applied ([`format_printk`]).

use super::drain::{collect, RingState};
use super::{word, Loader, LoaderError};
use bpf2ptx_backend::back::ptx::{map_symbol, PRINTK_DESC};
use bpf2ptx_compiler::isa::table::{CallKind, Kind};
use bpf2ptx_compiler::program::MapOrigin;
use bpf2ptx_runtime::desc;
use bpf2ptx_runtime::printk::{self, Word};

impl Loader<'_> {
    /// The lines `trace_printk` and `puts` wrote, formatted on the host: each record holds
    /// the address of its format (or string) in a read-only global-data map and its
    /// arguments.
    pub fn printk(&self) -> Result<Vec<String>, LoaderError> {
        let (gpu, module, obj) = (self.gpu, self.module, self.obj);
        // Only modules whose programs print have the printk ring; asking the driver for a
        // symbol it lacks is harmless but is an API error to compute-sanitizer.
        let prints = obj.programs.iter().flat_map(|p| &p.insns).any(|i| {
            i.kind() == Kind::Call(CallKind::Helper)
                && matches!(
                    bpf2ptx_runtime::helper(i.imm).map(|h| h.lowering),
                    Some(bpf2ptx_runtime::Lowering::Printk { .. })
                )
        });
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
        let string_at = |addr: u64, max: u64| -> String {
            for (p, size, init) in &bases {
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
        let mut lines = Vec::new();
        let record = printk::RECORD_BYTES as usize;
        for r in st.records.iter().filter(|r| r.data.len() >= record) {
            let w = |k: Word| word(&r.data, k as usize);
            let line = if w(Word::Kind) == printk::KIND_PUTS {
                string_at(w(Word::Format), 4096)
            } else {
                format_printk(
                    &string_at(w(Word::Format), w(Word::FormatSize)),
                    [w(Word::Arg0), w(Word::Arg1), w(Word::Arg2)],
                )
            };
            lines.push(line.trim_end_matches('\n').to_string());
        }
        Ok(lines)
    }
}

/// A small printf for `trace_printk` formats: `%d %i %u %x %X %o %p %c %%` with `l`, `ll`,
/// `h` and `hh` lengths, flags, width; at most three arguments, as in Linux.
pub fn format_printk(fmt: &str, args: [u64; 3]) -> String {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    let mut next = args.into_iter();
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
