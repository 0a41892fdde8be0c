//! `bpf2ptx dump`: what an input holds — sections, maps, programs and their disassembly
//! with relocations resolved to names and source lines interleaved — as text for people
//! and as JSON for tools. Both views are built from one [`Dump`] value so they never
//! disagree.

use bpf2ptx_compiler::isa::insn::RawInsn;
use bpf2ptx_compiler::program::{map_type_name, ExternKind, Object, Program, RelocTarget};
use serde::Serialize;
use std::fmt::Write as _;

/// The dump of one object.
#[derive(Serialize)]
pub struct Dump<'a> {
    file: &'a str,
    kind: bpf2ptx_compiler::program::SourceKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    license: Option<&'a str>,
    sections: &'a [bpf2ptx_compiler::program::Section],
    maps: Vec<MapView<'a>>,
    programs: Vec<ProgView<'a>>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    externs: &'a [bpf2ptx_compiler::program::Extern],
    #[serde(skip_serializing_if = "Option::is_none")]
    test: Option<&'a bpf2ptx_compiler::program::TestCase>,
}

#[derive(Serialize)]
struct MapView<'a> {
    index: usize,
    #[serde(flatten)]
    map: &'a bpf2ptx_compiler::program::Map,
    type_name: &'static str,
}

#[derive(Serialize)]
struct ProgView<'a> {
    name: &'a str,
    section: &'a str,
    insn_count: usize,
    slot_count: usize,
    funcs: &'a [bpf2ptx_compiler::program::Func],
    insns: Vec<InsnView>,
}

#[derive(Serialize)]
struct InsnView {
    /// Slot index (what jump offsets count).
    pc: usize,
    /// The instruction's bytes, one or two 16-hex-digit little-endian words.
    raw: Vec<String>,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reloc: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    line: Option<bpf2ptx_compiler::program::LineRef>,
}

impl<'a> Dump<'a> {
    /// Builds the dump of an object.
    pub fn new(obj: &'a Object) -> Dump<'a> {
        let maps = obj
            .maps
            .iter()
            .enumerate()
            .map(|(index, map)| MapView {
                index,
                map,
                type_name: map_type_name(map.map_type).unwrap_or("?"),
            })
            .collect();
        let programs = obj.programs.iter().map(|p| prog_view(obj, p)).collect();
        Dump {
            file: &obj.file,
            kind: obj.kind,
            license: obj.license.as_deref(),
            sections: &obj.sections,
            maps,
            programs,
            externs: &obj.externs,
            test: obj.test.as_ref(),
        }
    }

    /// The JSON form (pretty-printed, stable key order).
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("dump serialises");
        s.push('\n');
        s
    }

    /// The text form.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = self.write_text(&mut o);
        o
    }

    fn write_text(&self, o: &mut String) -> std::fmt::Result {
        writeln!(
            o,
            "file: {} ({})",
            self.file,
            serde_json::to_value(self.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default()
        )?;
        if let Some(l) = self.license {
            writeln!(o, "license: {l}")?;
        }
        if !self.sections.is_empty() {
            writeln!(o, "\nsections:")?;
            for s in self.sections {
                let kind = serde_json::to_value(s.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                writeln!(
                    o,
                    "  [{:2}] {:<32} {:<11} {:>7} bytes",
                    s.index, s.name, kind, s.size
                )?;
            }
        }
        if !self.maps.is_empty() {
            writeln!(o, "\nmaps:")?;
            for m in &self.maps {
                let mm = m.map;
                let origin = serde_json::to_value(mm.origin)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                writeln!(
                    o,
                    "  [{}] {:<20} {}({}) key {} value {} entries {} flags 0x{:x}  ({} in {})",
                    m.index,
                    mm.name,
                    m.type_name,
                    mm.map_type,
                    mm.key_size,
                    mm.value_size,
                    mm.max_entries,
                    mm.flags,
                    origin,
                    mm.section
                )?;
                if let Some(f) = mm.iproute2 {
                    let pinning = f.pinning_name().map_or_else(
                        || format!("{} (custom)", f.pinning),
                        |n| format!("{n} ({})", f.pinning),
                    );
                    let idx = if f.inner_idx == u32::MAX {
                        "none".to_string()
                    } else {
                        f.inner_idx.to_string()
                    };
                    writeln!(
                        o,
                        "      iproute2: id {} pinning {pinning} inner_id {} inner_idx {idx}",
                        f.id, f.inner_id
                    )?;
                }
                if let Some(inner) = &mm.inner {
                    writeln!(
                        o,
                        "      inner map {}: {}({}) key {} value {} entries {} flags 0x{:x}",
                        inner.name,
                        map_type_name(inner.map_type).unwrap_or("?"),
                        inner.map_type,
                        inner.key_size,
                        inner.value_size,
                        inner.max_entries,
                        inner.flags
                    )?;
                }
                if !mm.slots.is_empty() {
                    let slots: Vec<String> = mm
                        .slots
                        .iter()
                        .map(|s| {
                            let name = self.maps.get(s.map).map_or("?", |m| m.map.name.as_str());
                            format!("[{}] = {name}", s.slot)
                        })
                        .collect();
                    writeln!(o, "      initial entries: {}", slots.join(", "))?;
                }
            }
        }
        if !self.externs.is_empty() {
            writeln!(o, "\nexterns:")?;
            for (k, e) in self.externs.iter().enumerate() {
                let what = match &e.kind {
                    ExternKind::Kconfig {
                        ty,
                        offset,
                        size,
                        map,
                    } => format!(
                        "kconfig {} at {}+{offset} ({size} byte{})",
                        ty.describe(*size),
                        self.maps.get(*map).map_or("?", |m| m.map.name.as_str()),
                        if *size == 1 { "" } else { "s" }
                    ),
                    ExternKind::KsymVar { typeless: false } => "ksym variable".to_string(),
                    ExternKind::KsymVar { typeless: true } => {
                        "ksym variable (typeless)".to_string()
                    }
                    ExternKind::Kfunc => "kfunc".to_string(),
                };
                writeln!(
                    o,
                    "  [{k}] {:<24} {what}, BTF id {}{}",
                    e.name,
                    e.btf_id,
                    if e.weak { ", weak" } else { "" }
                )?;
            }
        }
        if let Some(t) = self.test {
            writeln!(o, "\ntest:")?;
            writeln!(o, "  mem: {} bytes", t.mem.len())?;
            if let Some(r) = t.result {
                writeln!(o, "  result: 0x{r:x}")?;
            }
            if let Some(e) = &t.error {
                writeln!(o, "  error: {e}")?;
            }
        }
        for p in &self.programs {
            writeln!(
                o,
                "\nprogram {} (section {}): {} insns, {} slots",
                p.name,
                if p.section.is_empty() { "-" } else { p.section },
                p.insn_count,
                p.slot_count
            )?;
            let mut last_line: Option<(String, u32)> = None;
            let mut fi = 0;
            for (i, ins) in p.insns.iter().enumerate() {
                while fi < p.funcs.len() && p.funcs[fi].start == i {
                    let f = &p.funcs[fi];
                    if f.section.is_empty() {
                        writeln!(o, "{}:", f.name)?;
                    } else {
                        writeln!(o, "{}:  ; {}+0x{:x}", f.name, f.section, f.section_offset)?;
                    }
                    fi += 1;
                }
                if let Some(l) = &ins.line {
                    let key = (l.file.clone(), l.line);
                    if last_line.as_ref() != Some(&key) {
                        let file = l.file.rsplit('/').next().unwrap_or(&l.file);
                        if l.text.is_empty() {
                            writeln!(o, "  ; {file}:{}", l.line)?;
                        } else {
                            writeln!(o, "  ; {file}:{}: {}", l.line, l.text.trim())?;
                        }
                        last_line = Some(key);
                    }
                }
                match &ins.reloc {
                    Some(r) => writeln!(o, "  {:5}: {:<40} ; {r}", ins.pc, ins.text)?,
                    None => writeln!(o, "  {:5}: {}", ins.pc, ins.text)?,
                }
            }
        }
        Ok(())
    }
}

fn prog_view<'a>(obj: &'a Object, p: &'a Program) -> ProgView<'a> {
    let pcs = p.pcs();
    let mut lines = p.lines.iter().peekable();
    let mut insns = Vec::with_capacity(p.insns.len());
    for (i, ins) in p.insns.iter().enumerate() {
        let mut line = None;
        while let Some((li, l)) = lines.peek() {
            if *li > i {
                break;
            }
            if *li == i {
                line = Some(l.clone());
            }
            lines.next();
        }
        let reloc = p.relocs.iter().find(|r| r.insn == i).map(|r| {
            let what = match &r.target {
                RelocTarget::Map { map } => format!("map {}", obj.maps[*map].name),
                RelocTarget::MapValue { map, offset } => {
                    format!("{}+{offset}", obj.maps[*map].name)
                }
                RelocTarget::Call { func } => format!("call {}", p.funcs[*func].name),
                RelocTarget::FuncAddr { func } => format!("&{}", p.funcs[*func].name),
                RelocTarget::Extern { ext } => match obj.externs.get(*ext).map(|e| &e.kind) {
                    Some(ExternKind::Kfunc) => format!("kfunc {}", obj.externs[*ext].name),
                    Some(_) => format!("ksym {}", obj.externs[*ext].name),
                    None => format!("extern #{ext}"),
                },
                RelocTarget::Kfunc { .. } => format!("kfunc {}", r.symbol),
            };
            if r.elf_type == "pc-relative" {
                what
            } else {
                format!("{what} ({} {})", r.elf_type, r.symbol)
            }
        });
        let raw = ins
            .encode()
            .into_iter()
            .flatten()
            .map(|r: RawInsn| format!("{:016x}", u64::from_be_bytes(r.to_bytes())))
            .collect();
        insns.push(InsnView {
            pc: pcs[i],
            raw,
            text: ins.to_string(),
            reloc,
            line,
        });
    }
    ProgView {
        name: &p.name,
        section: &p.section,
        insn_count: p.insns.len(),
        slot_count: pcs[p.insns.len()],
        funcs: &p.funcs,
        insns,
    }
}
