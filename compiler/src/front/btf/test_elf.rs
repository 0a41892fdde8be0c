//! Test helpers: the committed clang fixture objects and goblin-based readers of their
//! sections, relocations and symbols, plus a deterministic PRNG for corruption tests.

use goblin::elf::Elf;

/// `multi.bpf.c` built by clang 14 (DWARF 5).
pub(crate) const MULTI14: &[u8] = include_bytes!("../../../tests/fixtures/btf/multi.clang14.o");
/// `multi.bpf.c` built by clang 19 (DWARF 5).
pub(crate) const MULTI19: &[u8] = include_bytes!("../../../tests/fixtures/btf/multi.clang19.o");
/// `multi.bpf.c` built by clang 19 with `-gdwarf-4`.
pub(crate) const MULTI19_DWARF4: &[u8] =
    include_bytes!("../../../tests/fixtures/btf/multi.clang19.dwarf4.o");
/// `multi.bpf.c` built by clang 19 for big-endian BPF (`-target bpfeb`).
pub(crate) const MULTI19_BPFEB: &[u8] =
    include_bytes!("../../../tests/fixtures/btf/multi.clang19.bpfeb.o");
/// `maps.bpf.c` built by clang 19.
pub(crate) const MAPS19: &[u8] = include_bytes!("../../../tests/fixtures/btf/maps.clang19.o");
/// Source of the multi fixtures.
pub(crate) const MULTI_SRC: &str = include_str!("../../../tests/fixtures/btf/multi.bpf.c");

/// A relocation with its symbol resolved.
#[derive(Debug, Clone)]
pub(crate) struct Rel {
    pub(crate) offset: u64,
    pub(crate) r_type: u32,
    pub(crate) addend: Option<i64>,
    pub(crate) sym_value: u64,
    pub(crate) sym_section: String,
}

pub(crate) fn elf(bytes: &[u8]) -> Elf<'_> {
    Elf::parse(bytes).expect("fixture is a valid ELF")
}

pub(crate) fn section_name<'a>(elf: &Elf<'a>, index: usize) -> String {
    elf.section_headers
        .get(index)
        .and_then(|sh| elf.shdr_strtab.get_at(sh.sh_name))
        .unwrap_or("")
        .to_string()
}

/// Bytes of section `name`.
pub(crate) fn section<'a>(bytes: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let elf = elf(bytes);
    let sh = elf
        .section_headers
        .iter()
        .find(|sh| elf.shdr_strtab.get_at(sh.sh_name) == Some(name))?;
    let start = sh.sh_offset as usize;
    bytes.get(start..start + sh.sh_size as usize)
}

/// Relocations that apply to section `name`.
pub(crate) fn relocs(bytes: &[u8], name: &str) -> Vec<Rel> {
    let elf = elf(bytes);
    let mut out = Vec::new();
    for (shndx, rs) in &elf.shdr_relocs {
        let target = elf.section_headers[*shndx].sh_info as usize;
        if section_name(&elf, target) != name {
            continue;
        }
        for r in rs.iter() {
            let sym = elf.syms.get(r.r_sym).expect("symbol");
            out.push(Rel {
                offset: r.r_offset,
                r_type: r.r_type,
                addend: r.r_addend,
                sym_value: sym.st_value,
                sym_section: section_name(&elf, sym.st_shndx),
            });
        }
    }
    out
}

/// `(name, section, value, size, is_func)` of every named symbol.
pub(crate) fn symbols(bytes: &[u8]) -> Vec<(String, String, u64, u64, bool)> {
    let elf = elf(bytes);
    elf.syms
        .iter()
        .filter_map(|s| {
            let name = elf.strtab.get_at(s.st_name)?;
            (!name.is_empty() && s.st_type() != goblin::elf::sym::STT_SECTION).then(|| {
                (
                    name.to_string(),
                    section_name(&elf, s.st_shndx),
                    s.st_value,
                    s.st_size,
                    s.st_type() == goblin::elf::sym::STT_FUNC,
                )
            })
        })
        .collect()
}

/// Deterministic xorshift PRNG for corruption tests.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}
