//! Triton's kernels under `bpf2ptx trace` (specs/trace.md, "Triton"): the Python start-up
//! hook and the environment that puts it in every Python process of the traced command.
//!
//! Triton assembles its kernels itself and loads cubins, so the interposer alone never
//! sees their PTX. The hook (`sitecustomize.py`, beside this file) wraps Triton's `ptx`
//! stage and hands each kernel's PTX to the interposer (`bpf2ptx-interposer`'s `python`
//! module), which injects the probes as it would into any module; Triton assembles the
//! result, and the interposer binds the cubin at its load.
//!
//! Triton and TorchInductor cache what they compile, keyed by their own inputs only, so
//! an instrumented kernel in the user's caches would later run untraced, and a cached
//! plain one would run unprobed under trace. The traced command therefore gets caches of
//! its own, keyed by everything that decides the instrumented text (the interposer's
//! build, the probe object, the inject options): a second trace of the same probes finds
//! its kernels there, compiled.

use std::ffi::OsString;
use std::hash::{DefaultHasher, Hasher};
use std::path::{Path, PathBuf};

/// The hook, written as `sitecustomize.py` into the session folder's `python/`.
const HOOK: &str = include_str!("sitecustomize.py");

/// The hook's folder in the session folder, first on the command's `PYTHONPATH`.
pub const HOOK_DIR: &str = "python";

/// The variables the traced command gets, in order: `PYTHONPATH` (the hook's folder
/// ahead of the user's path), `TRITON_CACHE_DIR` and `TORCHINDUCTOR_CACHE_DIR` (caches
/// of the session's own: under `cache_root`, named by `key`; without a cache root, in
/// the session folder, fresh for each run). Writes the hook into `session`.
pub fn environment(
    session: &Path,
    cache_root: Option<&Path>,
    key: u64,
) -> std::io::Result<Vec<(&'static str, OsString)>> {
    let dir = session.join(HOOK_DIR);
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("sitecustomize.py"), HOOK)?;
    let mut path = dir.into_os_string();
    if let Some(old) = std::env::var_os("PYTHONPATH").filter(|p| !p.is_empty()) {
        path.push(":");
        path.push(old);
    }
    let cache = |what: &str| -> PathBuf {
        match cache_root {
            Some(root) => root.join(what).join(format!("{key:016x}")),
            None => session.join(format!("{what}-cache")),
        }
    };
    Ok(vec![
        ("PYTHONPATH", path),
        ("TRITON_CACHE_DIR", cache("triton").into_os_string()),
        (
            "TORCHINDUCTOR_CACHE_DIR",
            cache("inductor").into_os_string(),
        ),
    ])
}

/// The caches' key: a hash of `parts` (the interposer library's bytes, the probe
/// object's, the inject options). `DefaultHasher` is not stable across Rust releases; a
/// `bpf2ptx` built by another toolchain only misses the cache.
pub fn cache_key(parts: &[&[u8]]) -> u64 {
    let mut h = DefaultHasher::new();
    for p in parts {
        h.write_usize(p.len());
        h.write(p);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_goes_first_on_the_python_path_and_the_caches_are_the_sessions_own() {
        let session = tempfile::tempdir().unwrap();
        let key = cache_key(&[b"interposer", b"probes", b"options"]);
        let env = environment(session.path(), Some(Path::new("/c/bpf2ptx")), key).unwrap();
        let names: Vec<&str> = env.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            ["PYTHONPATH", "TRITON_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR"]
        );
        let hook = session.path().join(HOOK_DIR);
        assert!(env[0]
            .1
            .to_str()
            .unwrap()
            .starts_with(hook.to_str().unwrap()));
        assert_eq!(
            std::fs::read_to_string(hook.join("sitecustomize.py")).unwrap(),
            HOOK
        );
        assert_eq!(
            env[1].1,
            OsString::from(format!("/c/bpf2ptx/triton/{key:016x}"))
        );
        assert_eq!(
            env[2].1,
            OsString::from(format!("/c/bpf2ptx/inductor/{key:016x}"))
        );
        // No cache root: fresh caches in the session folder.
        let env = environment(session.path(), None, key).unwrap();
        assert_eq!(
            env[1].1,
            session.path().join("triton-cache").into_os_string()
        );
    }

    #[test]
    fn the_key_changes_with_any_part_and_with_how_they_are_split() {
        let k = cache_key(&[b"ab", b"c"]);
        assert_eq!(k, cache_key(&[b"ab", b"c"]));
        assert_ne!(k, cache_key(&[b"a", b"bc"]));
        assert_ne!(k, cache_key(&[b"ab", b"d"]));
    }
}
