//! The loader fuzz target's body (`fuzz/fuzz_targets/load.rs`) over systematic mutations
//! of the corpus objects (`tests/corpus/obj` and the odd objects of `tests/corpus/odd/obj`), a sample of the bpf_conformance files and the committed
//! reproducers in `tests/bad-input/`, so `cargo test` catches the shallow panics a fuzzer
//! would: every truncation length at a stride, single-byte changes at a stride over the
//! ELF header, the section header table, `.symtab`, the relocation sections, `.BTF` and
//! `.BTF.ext` (and the whole file), and seeded multi-byte corruptions.
//!
//! The assertion: no input panics (all panics are collected and reported with the file
//! and the mutation); truncated ELF objects are rejected; the unmutated corpus loads.

use bpf2ptx_tests::{conformance_dir, files_with_ext, repo_root};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

/// Truncation lengths per file.
const TRUNCATIONS: usize = 97;
/// Single-byte changes per ELF region (section header table, `.symtab`, ...).
const FLIPS_PER_REGION: usize = 24;
/// Single-byte changes over the whole file.
const FLIPS_PER_FILE: usize = 48;
/// Seeded multi-byte corruptions per file.
const RANDOM: usize = 20;
/// Objects larger than this (`big*.o`: tens of thousands of instructions, ~0.2 s per
/// load and dump in a debug build) only get truncations; their structure is the same as
/// the small objects', which get the rest.
const BIG: usize = 65536;
/// How many conformance files (every k-th of the sorted suite).
const CONFORMANCE_FILES: usize = 30;

thread_local! {
    /// Where the last panic on this thread happened, with a backtrace (set by the hook
    /// [`quiet_panics`] installs).
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replaces the default panic hook (which would print every caught panic) by one that
/// records the location and backtrace for the report. This file holds one test, so the
/// process-wide hook affects nothing else.
fn quiet_panics() {
    std::panic::set_hook(Box::new(|info| {
        let bt = std::backtrace::Backtrace::force_capture();
        let loc = info
            .location()
            .map_or_else(String::new, |l| format!(" at {}:{}", l.file(), l.line()));
        // Keep the frames between the panic machinery and our catch_unwind.
        let bt = bt.to_string();
        let frames: Vec<&str> = bt
            .lines()
            .skip_while(|l| !l.contains("core::panicking::") && !l.contains("rust_begin_unwind"))
            .take_while(|l| !l.contains("std::panicking::catch_unwind"))
            .collect();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{loc}\n{}", frames.join("\n"))));
    }));
}

/// The fuzz target's body: load, and on success build both dumps. `Ok(true)` when the
/// input loaded, `Err((message, location and backtrace))` when something panicked.
fn run_target(name: &str, bytes: &[u8]) -> Result<bool, (String, String)> {
    catch_unwind(AssertUnwindSafe(|| {
        match bpf2ptx_compiler::front::load_bytes(name, bytes) {
            Ok(obj) => {
                let d = bpf2ptx::dump::Dump::new(&obj);
                let _ = d.to_text();
                let _ = d.to_json();
                true
            }
            Err(e) => {
                // The message is built too: Display impls must not panic either.
                let _ = e.to_string();
                false
            }
        }
    }))
    .map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "non-string panic".into());
        let at = LAST_PANIC
            .with(|p| p.borrow_mut().take())
            .unwrap_or_default();
        (msg, at)
    })
}

/// Mutation runner: applies mutations to one file and records what went wrong.
struct Fuzz<'a> {
    name: &'a str,
    orig: &'a [u8],
    runs: usize,
    accepted: usize,
    failures: &'a mut Vec<String>,
}

impl Fuzz<'_> {
    fn check(&mut self, what: &str, bytes: &[u8], must_fail: bool) {
        self.runs += 1;
        match run_target(self.name, bytes) {
            Ok(ok) => {
                self.accepted += usize::from(ok);
                if ok && must_fail {
                    self.failures.push(format!(
                        "{}: {what}: accepted, expected an error",
                        self.name
                    ));
                }
            }
            Err((msg, at)) => {
                // The first panic gets its backtrace; later ones only their location.
                let at = if self.failures.iter().any(|f| f.contains("panicked")) {
                    at.lines().next().unwrap_or_default().to_string()
                } else {
                    at
                };
                self.failures
                    .push(format!("{}: {what}: panicked: {msg}{at}", self.name));
            }
        }
    }

    fn truncations(&mut self, must_fail: bool) {
        let n = self.orig.len();
        let step = n.div_ceil(TRUNCATIONS).max(1);
        let mut lens: Vec<usize> = (0..n).step_by(step).collect();
        // Plus the lengths right around the end.
        lens.extend(n.saturating_sub(9)..n);
        lens.sort_unstable();
        lens.dedup();
        let orig = self.orig;
        for len in lens {
            self.check(&format!("truncated to {len}"), &orig[..len], must_fail);
        }
    }

    /// Changes one byte at a time at a stride over `range`, cycling through values that
    /// break sizes, counts, indices and flags in different ways.
    fn flips(&mut self, region: &str, range: std::ops::Range<usize>, count: usize) {
        let range = range.start.min(self.orig.len())..range.end.min(self.orig.len());
        if range.is_empty() {
            return;
        }
        let step = range.len().div_ceil(count).max(1);
        for (k, at) in range.step_by(step).enumerate() {
            let mut b = self.orig.to_vec();
            b[at] = match k % 6 {
                0 => b[at] ^ 0xff,
                1 => b[at] ^ 0x01,
                2 => 0,
                3 => 0xff,
                4 => b[at].wrapping_add(0x10),
                _ => 0x80,
            };
            self.check(
                &format!("{region} byte {at:#x} = {:#04x}", b[at]),
                &b,
                false,
            );
        }
    }

    /// Seeded multi-byte corruptions: a few random bytes, a random u32 set to an extreme
    /// value, or a block copied from elsewhere in the file.
    fn random(&mut self, rng: &mut XorShift, text: bool) {
        let n = self.orig.len();
        if n == 0 {
            return;
        }
        for k in 0..RANDOM {
            let mut b = self.orig.to_vec();
            let what = match k % 3 {
                0 => {
                    let count = 2 + rng.below(7);
                    for _ in 0..count {
                        let at = rng.below(n);
                        b[at] = if text {
                            *b"0123456789abcdef-%r+[] \n#:x"
                                .get(rng.below(27))
                                .expect("in range")
                        } else {
                            rng.next() as u8
                        };
                    }
                    format!("random #{k}: {count} bytes")
                }
                1 if n >= 4 => {
                    let at = rng.below(n / 4) * 4;
                    let v = [0u32, 1, 0x7fff_ffff, 0x8000_0000, u32::MAX, 0x10000][rng.below(6)];
                    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
                    format!("random #{k}: u32 at {at:#x} = {v:#x}")
                }
                _ => {
                    let len = 1 + rng.below(32.min(n));
                    let (src, dst) = (rng.below(n - len + 1), rng.below(n - len + 1));
                    b.copy_within(src..src + len, dst);
                    format!("random #{k}: copy {len} bytes {src:#x} -> {dst:#x}")
                }
            };
            self.check(&what, &b, false);
        }
    }
}

/// xorshift64*: deterministic, no dependency.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The byte ranges of an ELF object worth mutating: (name, range). Hand-parsed ELF64
/// little-endian section headers; an object that does not parse gives only its header.
fn elf_regions(b: &[u8]) -> Vec<(String, std::ops::Range<usize>)> {
    let mut out = vec![("ELF header".to_string(), 0..64)];
    let u16_at = |at: usize| b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
    let u32_at = |at: usize| {
        b.get(at..at + 4)
            .map(|s| u32::from_le_bytes(s.try_into().expect("4")))
    };
    let u64_at = |at: usize| {
        b.get(at..at + 8)
            .map(|s| u64::from_le_bytes(s.try_into().expect("8")) as usize)
    };
    let (Some(shoff), Some(shnum), Some(shstrndx)) = (u64_at(0x28), u16_at(0x3c), u16_at(0x3e))
    else {
        return out;
    };
    let (shnum, shstrndx) = (shnum as usize, shstrndx as usize);
    out.push(("section headers".into(), shoff..shoff + 64 * shnum));
    let Some(strtab) = u64_at(shoff + 64 * shstrndx + 24) else {
        return out;
    };
    for i in 0..shnum {
        let h = shoff + 64 * i;
        let (Some(name), Some(ty), Some(off), Some(size)) =
            (u32_at(h), u32_at(h + 4), u64_at(h + 24), u64_at(h + 32))
        else {
            continue;
        };
        let name_at = strtab + name as usize;
        let name = b
            .get(name_at..)
            .and_then(|s| s.split(|&c| c == 0).next())
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .unwrap_or_default();
        const SHT_SYMTAB: u32 = 2;
        const SHT_REL: u32 = 9;
        if ty == SHT_SYMTAB || ty == SHT_REL || name == ".BTF" || name == ".BTF.ext" {
            out.push((name, off..off + size));
        }
    }
    out
}

#[test]
fn loader_survives_mutations() {
    quiet_panics();
    let start = std::time::Instant::now();
    let mut failures = Vec::new();
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let mut summary = Vec::new();

    // Corpus objects.
    // The corpus and the odd-object corpus (sections without function symbols,
    // iproute2's maps, maps of maps, kconfig and ksym externs).
    let mut objs = files_with_ext(&repo_root().join("tests/corpus/obj"), "o");
    assert!(!objs.is_empty(), "no corpus objects");
    let odd = files_with_ext(&repo_root().join("tests/corpus/odd/obj"), "o");
    assert!(odd.len() >= 6, "odd corpus has {} objects", odd.len());
    objs.extend(odd);
    for path in &objs {
        let bytes = std::fs::read(path).expect("read corpus object");
        let name = file_name(path);
        let t0 = std::time::Instant::now();
        let mut f = Fuzz {
            name: &name,
            orig: &bytes,
            runs: 0,
            accepted: 0,
            failures: &mut failures,
        };
        // The unmutated object must load, or the mutations below test nothing deep.
        match run_target(&name, &bytes) {
            Ok(true) => {}
            Ok(false) => f.failures.push(format!(
                "{name}: unmutated corpus object does not load: {}",
                bpf2ptx_compiler::front::load_bytes(&name, &bytes)
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default()
            )),
            Err((msg, at)) => f
                .failures
                .push(format!("{name}: unmutated: panicked: {msg}{at}")),
        }
        f.truncations(true);
        if bytes.len() > BIG {
            summary.push(format!("{name}: {} runs (big: truncations only)", f.runs));
            continue;
        }
        f.flips("file", 0..bytes.len(), FLIPS_PER_FILE);
        for (region, range) in elf_regions(&bytes) {
            // Every header byte; fewer in the DWARF relocations, which only matter for
            // objects without .BTF.ext.
            let count = if region == "ELF header" {
                64
            } else if region.starts_with(".rel.debug_") {
                FLIPS_PER_REGION / 3
            } else {
                FLIPS_PER_REGION
            };
            f.flips(&region, range, count);
        }
        f.random(&mut rng, false);
        summary.push(format!(
            "{name}: {} runs, {} accepted, {:.1?}",
            f.runs,
            f.accepted,
            t0.elapsed()
        ));
    }

    // A sample of the conformance suite.
    match conformance_dir() {
        None => eprintln!("fuzz_smoke: no bpf_conformance suite found; conformance part skipped"),
        Some(dir) => {
            let all = files_with_ext(&dir.join("tests"), "data");
            let step = all.len().div_ceil(CONFORMANCE_FILES).max(1);
            for path in all.iter().step_by(step) {
                let bytes = std::fs::read(path).expect("read conformance file");
                let name = file_name(path);
                let t0 = std::time::Instant::now();
                let mut f = Fuzz {
                    name: &name,
                    orig: &bytes,
                    runs: 0,
                    accepted: 0,
                    failures: &mut failures,
                };
                // A truncated text can still be a valid program: no Err required.
                f.truncations(false);
                f.flips("file", 0..bytes.len(), FLIPS_PER_FILE);
                f.random(&mut rng, true);
                summary.push(format!(
                    "{name}: {} runs, {} accepted, {:.1?}",
                    f.runs,
                    f.accepted,
                    t0.elapsed()
                ));
            }
        }
    }

    // Committed reproducers: each must now load or fail cleanly, unmutated and mutated.
    let bad = repo_root().join("tests/bad-input");
    if let Ok(entries) = std::fs::read_dir(&bad) {
        let mut paths: Vec<_> = entries
            .map(|e| e.expect("dir entry").path())
            .filter(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"))
            .collect();
        paths.sort();
        for path in &paths {
            let bytes = std::fs::read(path).expect("read bad input");
            let name = file_name(path);
            let mut f = Fuzz {
                name: &name,
                orig: &bytes,
                runs: 0,
                accepted: 0,
                failures: &mut failures,
            };
            f.check("unmutated", &bytes, false);
            f.truncations(false);
            f.random(&mut rng, !bytes.starts_with(b"\x7fELF"));
        }
    }

    // Back to the default hook, so the assertion below is reported.
    drop(std::panic::take_hook());
    println!("{}", summary.join("\n"));
    println!("fuzz_smoke: {:.1?}", start.elapsed());
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}
