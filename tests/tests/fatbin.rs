//! PTX out of nvcc's containers (`bpf2ptx_backend::inject::fatbin`), over the fixtures in
//! `tests/inject/fatbin/` (rebuilt by its `build.sh`, CUDA 13.5 nvcc, and 13.0 for the
//! objects its README names):
//!
//! - every fixture gives the PTX images it was built with, each equal to what `nvcc -ptx`
//!   gives for the same source and arch (up to what fatbinary strips: comments and
//!   indentation; lines stay lines), whatever the compression;
//! - SASS-only inputs give `NoPtx` with their architectures and a rebuild hint;
//! - every prefix of every fixture, and bit flips in them, give errors or entries, never a
//!   panic; a few targeted corruptions give the expected structured error.

use bpf2ptx_backend::inject::fatbin::{extract_ptx, is_container, Compression, FatbinError};
use bpf2ptx_backend::inject::ptx;
use bpf2ptx_tests::{files_with_ext, repo_root};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

use Compression::{Lz4, None as Plain, Zstd};

/// One PTX image a fixture must yield: (virtual arch, reference `nvcc -ptx` file,
/// compression, identifier).
type Image = (u32, &'static str, Compression, Option<&'static str>);

const V90: &str = "vecadd.compute_90.ptx";
const V75: &str = "vecadd.compute_75.ptx";

/// Every container fixture and the PTX images it holds, in file order.
const CASES: &[(&str, &[Image])] = &[
    ("vecadd.ptx.fatbin", &[(90, V90, Zstd, None)]),
    ("vecadd.ptx.none.fatbin", &[(90, V90, Plain, None)]),
    ("vecadd.ptx.default.fatbin", &[(90, V90, Zstd, None)]),
    ("vecadd.ptx.size.fatbin", &[(90, V90, Zstd, None)]),
    ("vecadd.ptx.speed.fatbin", &[(90, V90, Lz4, None)]),
    ("vecadd.ptx.balance.fatbin", &[(90, V90, Zstd, None)]),
    ("vecadd.ptx.compress-all.fatbin", &[(90, V90, Zstd, None)]),
    (
        "vecadd.concat.fatbin",
        &[(90, V90, Zstd, None), (75, V75, Zstd, None)],
    ),
    (
        "vecadd.concat.speed.fatbin",
        &[(90, V90, Lz4, None), (75, V75, Lz4, None)],
    ),
    ("vecadd.ident.fatbin", &[(90, V90, Zstd, Some("vecadd.cu"))]),
    ("vecadd.sass-ptx.fatbin", &[(90, V90, Zstd, None)]),
    ("vecadd.o", &[(90, V90, Zstd, None)]),
    (
        "vecadd.rdc.o",
        &[(90, "vecadd.rdc.compute_90.ptx", Zstd, None)],
    ),
    ("libvecadd.so", &[(90, V90, Zstd, None)]),
    (
        "app",
        &[
            (90, V90, Zstd, None),
            (75, "reduce.compute_75.ptx", Zstd, None),
        ],
    ),
    // nvcc 13.0 (the GPU machine's): -arch=sm_90a keeps compute_90 PTX beside
    // compute_90a's, both arch 90 in the entry header; two -gencode.
    (
        "vecadd.sm_90a.o",
        &[
            (90, "vecadd.13.0.compute_90.ptx", Zstd, None),
            (90, "vecadd.13.0.compute_90a.ptx", Zstd, None),
        ],
    ),
    (
        "vecadd.multi.o",
        &[
            (75, "vecadd.13.0.compute_75.ptx", Zstd, None),
            (90, "vecadd.13.0.compute_90.ptx", Zstd, None),
        ],
    ),
];

/// Inputs without PTX and the SASS architectures the error must list.
const NO_PTX: &[(&str, &[u32])] = &[
    ("vecadd.sass.fatbin", &[90, 75]),
    ("vecadd.sm_90.cubin", &[90]),
];

fn dir() -> PathBuf {
    repo_root().join("tests/inject/fatbin")
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(dir().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// What fatbinary keeps of a PTX text: each line without its `//` comment, its blanks
/// collapsed to one space and trimmed.
fn minified(ptx: &str) -> Vec<String> {
    ptx.lines()
        .map(|l| {
            let code = l.split("//").next().unwrap_or("");
            code.split_whitespace().collect::<Vec<_>>().join(" ")
        })
        .collect()
}

#[test]
fn every_fixture_is_covered() {
    let mut listed: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    listed.extend(NO_PTX.iter().map(|c| c.0));
    for ext in ["fatbin", "o", "so", "cubin"] {
        for p in files_with_ext(&dir(), ext) {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            assert!(listed.contains(&name.as_str()), "{name} has no case");
        }
    }
}

#[test]
fn fixtures_give_the_ptx_nvcc_gives() {
    for (file, images) in CASES {
        let bytes = read(file);
        assert!(is_container(&bytes), "{file}");
        let got = extract_ptx(&bytes).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(got.len(), images.len(), "{file}: number of PTX images");
        for (entry, (arch, reference, compression, name)) in got.iter().zip(images.iter()) {
            let what = format!("{file} image {}", entry.index);
            assert_eq!(entry.arch, *arch, "{what}: arch");
            assert_eq!(entry.compression, *compression, "{what}: compression");
            assert_eq!(entry.name.as_deref(), *name, "{what}: identifier");
            let reference = String::from_utf8(read(reference)).unwrap();
            assert!(
                reference.contains(&format!(
                    ".version {}.{}",
                    entry.isa_version.0, entry.isa_version.1
                )),
                "{what}: PTX ISA {:?} is not the reference's",
                entry.isa_version
            );
            // Line for line what nvcc -ptx gave, and already minified (idempotent).
            pretty_assertions::assert_eq!(minified(&reference), minified(&entry.ptx), "{what}");
            assert_eq!(
                entry.ptx.lines().collect::<Vec<_>>(),
                minified(&entry.ptx),
                "{what}: not fatbinary's minified form"
            );
            ptx::parse(&entry.ptx).unwrap_or_else(|e| panic!("{what}: {e}"));
        }
    }
}

#[test]
fn compressed_and_plain_images_are_the_same_text() {
    let plain = extract_ptx(&read("vecadd.ptx.none.fatbin")).unwrap();
    for (file, images) in CASES {
        let got = extract_ptx(&read(file)).unwrap();
        for (entry, image) in got.iter().zip(images.iter()) {
            if image.1 == V90 {
                assert_eq!(entry.ptx, plain[0].ptx, "{file} image {}", entry.index);
            }
        }
    }
}

#[test]
fn sass_only_inputs_say_how_to_rebuild() {
    for (file, archs) in NO_PTX {
        let err = extract_ptx(&read(file)).unwrap_err();
        assert_eq!(
            err,
            FatbinError::NoPtx {
                sass_archs: archs.to_vec()
            },
            "{file}"
        );
        let msg = err.to_string();
        let list: Vec<String> = archs.iter().map(|a| format!("sm_{a}")).collect();
        assert!(msg.contains(&list.join(", ")), "{file}: {msg}");
        assert!(
            msg.contains("-gencode arch=compute_90,code=compute_90"),
            "{file}: {msg}"
        );
    }
}

#[test]
fn other_inputs_are_refused_by_name() {
    // A BPF object: ELF, but no device code.
    let bpf = files_with_ext(&repo_root().join("tests/corpus/obj"), "o");
    let bpf = std::fs::read(&bpf[0]).unwrap();
    assert_eq!(extract_ptx(&bpf), Err(FatbinError::NoDeviceCode));
    // PTX text is not a container.
    let text = read(V90);
    assert!(!is_container(&text));
    assert!(matches!(
        extract_ptx(&text),
        Err(FatbinError::NotAContainer { .. })
    ));
    assert!(matches!(
        extract_ptx(&[]),
        Err(FatbinError::NotAContainer { .. })
    ));
}

/// Fatbin entry header of `vecadd.ptx.fatbin` (one zstd PTX entry) starts here.
const ENTRY: usize = 16;

type Mutation = fn(&mut Vec<u8>);
/// Whether an error is the one a corruption must give.
type Expect = fn(&FatbinError) -> bool;

/// Targeted corruptions of `vecadd.ptx.fatbin` and the error each must give.
#[test]
fn corruptions_give_structured_errors() {
    let cases: &[(&str, Mutation, Expect)] = &[
        (
            "cut inside the first entry",
            |b| b.truncate(40),
            |e| {
                *e == FatbinError::Truncated {
                    what: "fatbin entries",
                    offset: 16,
                    needed: 464,
                    available: 24,
                }
            },
        ),
        (
            "fatbin size shrunk into the entry header",
            |b| {
                b[8] = 0x20;
                b[9] = 0;
            },
            |e| {
                matches!(
                    e,
                    FatbinError::Truncated {
                        what: "entry header",
                        offset: 16,
                        ..
                    }
                )
            },
        ),
        (
            "entry header size below the fixed fields",
            |b| b[ENTRY + 4] = 0x10,
            |e| matches!(e, FatbinError::BadHeader { offset: 16, .. }),
        ),
        (
            "both compression flags",
            |b| b[ENTRY + 0x29] |= 0xa0,
            |e| {
                matches!(
                    e,
                    FatbinError::UnknownCompression {
                        index: 0,
                        offset: 16,
                        ..
                    }
                )
            },
        ),
        (
            "decompressed size one more",
            |b| b[ENTRY + 0x38] += 1,
            |e| {
                matches!(
                    e,
                    FatbinError::SizeMismatch {
                        index: 0,
                        offset: 16,
                        expected: 886,
                        actual: 885
                    }
                )
            },
        ),
        (
            "decompressed size one less",
            |b| b[ENTRY + 0x38] -= 1,
            |e| {
                matches!(
                    e,
                    FatbinError::SizeMismatch {
                        expected: 884,
                        actual: 885,
                        ..
                    }
                )
            },
        ),
        (
            "compressed size beyond the payload",
            |b| b[ENTRY + 0x11] = 0x10,
            |e| {
                matches!(
                    e,
                    FatbinError::BadHeader {
                        what: "entry header",
                        ..
                    }
                )
            },
        ),
        (
            "zstd magic damaged",
            |b| b[0x60] ^= 0xff,
            |e| {
                matches!(
                    e,
                    FatbinError::Decompress {
                        codec: Compression::Zstd,
                        ..
                    }
                )
            },
        ),
        (
            "garbage after the fatbin",
            |b| b.extend_from_slice(b"junk"),
            |e| matches!(e, FatbinError::BadMagic { offset: 480, .. }),
        ),
        (
            "gigabytes claimed",
            |b| b[ENTRY + 0x3c] = 1,
            |e| matches!(e, FatbinError::TooLarge { .. }),
        ),
    ];
    let original = read("vecadd.ptx.fatbin");
    for (what, mutate, expected) in cases {
        let mut bytes = original.clone();
        mutate(&mut bytes);
        match extract_ptx(&bytes) {
            Err(e) => assert!(expected(&e), "{what}: unexpected error {e:?}"),
            Ok(v) => panic!("{what}: accepted ({} images)", v.len()),
        }
    }
}

fn no_panic(what: &str, bytes: &[u8]) -> Option<Result<usize, FatbinError>> {
    match catch_unwind(AssertUnwindSafe(|| extract_ptx(bytes).map(|v| v.len()))) {
        Ok(r) => Some(r),
        Err(_) => panic!("{what}: extract_ptx panicked"),
    }
}

#[test]
fn every_prefix_is_refused_without_panicking() {
    let all = CASES.iter().map(|c| c.0).chain(NO_PTX.iter().map(|c| c.0));
    for file in all {
        let bytes = read(file);
        for len in 0..bytes.len() {
            let r = no_panic(&format!("{file}[..{len}]"), &bytes[..len]);
            // A fatbin ends with its last entry; ELF keeps its section headers at the end.
            if let Some(Ok(n)) = r {
                panic!("{file}[..{len}] accepted with {n} images");
            }
        }
    }
}

#[test]
fn bit_flips_never_panic() {
    for file in CASES.iter().map(|c| c.0).chain(NO_PTX.iter().map(|c| c.0)) {
        let bytes = read(file);
        // Every bit of the first 256 bytes (the headers of a fatbin), then a fixed
        // pseudo-random spread over the rest (the payloads, and ELF section headers).
        let mut positions: Vec<usize> = (0..bytes.len().min(256) * 8).collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..2000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            positions.push((x % (bytes.len() as u64 * 8)) as usize);
        }
        for bit in positions {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            no_panic(&format!("{file} bit {bit}"), &b);
        }
    }
}
