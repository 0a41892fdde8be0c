//! Prints what the build script made: the probe's PTX module and the kernel with the probe
//! woven in, both embedded at compile time. `bpf2ptx-example-buildrs OUT.ptx` also writes
//! the instrumented kernel, ready for `cuModuleLoad` (examples/README.md shows how a host
//! reads its `launches` map).

/// The probe alone (`bpf2ptx launch_count.bpf.c -o launch_count.ptx --target sm_90`):
/// for a host that links it with `--extern` call sites (examples/link).
const PROBE_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/launch_count.ptx"));

/// examples/apps/vecadd.ptx with the probe inlined at each kernel's entry.
const INSTRUMENTED_PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/vecadd.launch_count.ptx"));

/// The names after `prefix` on the lines that declare one (`.entry NAME(`, a map global).
fn declared<'a>(ptx: &'a str, prefix: &str) -> Vec<&'a str> {
    ptx.lines()
        .filter_map(|l| l.split_once(prefix).map(|(_, rest)| rest))
        .filter_map(|rest| {
            rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
        })
        .filter(|name| !name.is_empty())
        .collect()
}

fn main() -> std::io::Result<()> {
    println!(
        "probe module: {} lines, maps {:?}",
        PROBE_PTX.lines().count(),
        declared(PROBE_PTX, ".u64 bpf2ptx_map_")
    );
    println!(
        "instrumented vecadd: {} lines, kernels {:?}, maps {:?}",
        INSTRUMENTED_PTX.lines().count(),
        declared(INSTRUMENTED_PTX, ".entry "),
        declared(INSTRUMENTED_PTX, ".u64 bpf2ptx_map_")
    );
    if let Some(path) = std::env::args_os().nth(1) {
        std::fs::write(&path, INSTRUMENTED_PTX)?;
        println!("wrote {}", std::path::Path::new(&path).display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// The build script ran the whole chain: the kernel carries the probe's map and a
    /// call site at its entry.
    #[test]
    fn the_kernel_carries_the_probe() {
        assert_eq!(
            super::declared(super::PROBE_PTX, ".u64 bpf2ptx_map_"),
            ["launches"]
        );
        assert_eq!(
            super::declared(super::INSTRUMENTED_PTX, ".u64 bpf2ptx_map_"),
            ["launches"]
        );
        assert!(super::PROBE_PTX.contains(".target sm_90"));
        assert!(super::INSTRUMENTED_PTX.contains("_Z6vecAddPKfS0_Pfi"));
    }
}
