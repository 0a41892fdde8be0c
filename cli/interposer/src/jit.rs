//! Assembling an instrumented module, with its result cached on disk by content.
//!
//! The driver JIT-compiles PTX at every load, which for a large module costs seconds. The
//! interposer has the driver link the PTX into a cubin (`cuLinkCreate`, `cuLinkAddData`,
//! `cuLinkComplete`), keeps the cubin in the cache folder, and loads the cubin: a second
//! run of the same application with the same probes on the same GPU and driver loads the
//! cubin and pays no JIT.
//!
//! The cache key is everything the cubin depends on: the instrumented PTX, the device's
//! compute capability and the driver's version. An entry is two files named by a 64-bit
//! FNV-1a hash of the key: `<hash>.key` (the key itself) and `<hash>.cubin`. A hit
//! compares the whole key, so a hash collision is a miss, never a wrong module. Both files
//! are written to temporary names and renamed, the key last, so a reader never sees an
//! entry whose cubin is incomplete. Any cache failure falls back to loading the PTX.

use crate::driver::*;
use crate::resolve::driver_fn;
use std::ffi::{c_int, c_uint, c_void};
use std::path::{Path, PathBuf};

type LinkCreate = unsafe extern "C" fn(c_uint, *mut c_int, *mut Ptr, *mut Ptr) -> CuResult;
type LinkComplete = unsafe extern "C" fn(Ptr, *mut Ptr, *mut usize) -> CuResult;
type LinkDestroy = unsafe extern "C" fn(Ptr) -> CuResult;
type CtxGetDevice = unsafe extern "C" fn(*mut c_int) -> CuResult;
type DeviceGetAttribute = unsafe extern "C" fn(*mut c_int, c_int, c_int) -> CuResult;
type DriverGetVersion = unsafe extern "C" fn(*mut c_int) -> CuResult;

/// `CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR` / `_MINOR`.
const CC_MAJOR: c_int = 75;
const CC_MINOR: c_int = 76;

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Attribute `attr` (`CUdevice_attribute`) of the current context's device; `None` when
/// the driver cannot say.
pub fn device_attribute(attr: c_int) -> Option<c_int> {
    // SAFETY: the driver's functions (CUDA 12.0 ABI) with valid out pointers.
    unsafe {
        let get_dev = std::mem::transmute::<Ptr, CtxGetDevice>(driver_fn(c"cuCtxGetDevice")?);
        let get =
            std::mem::transmute::<Ptr, DeviceGetAttribute>(driver_fn(c"cuDeviceGetAttribute")?);
        let (mut dev, mut v) = (0, 0);
        (get_dev(&mut dev) == SUCCESS && get(&mut v, attr, dev) == SUCCESS).then_some(v)
    }
}

/// The compute capability of the current context's device as one number (90 for sm_90).
/// `None` when the driver cannot say.
pub fn device_arch() -> Option<u32> {
    let (major, minor) = (device_attribute(CC_MAJOR)?, device_attribute(CC_MINOR)?);
    u32::try_from(major * 10 + minor).ok()
}

/// The cache key of `ptx` on the current device and driver: a header line naming them,
/// then the PTX. `None` when the driver cannot say.
pub fn key(ptx: &str) -> Option<Vec<u8>> {
    let arch = device_arch()?;
    // SAFETY: the driver's function (CUDA 12.0 ABI) with a valid out pointer.
    let ver = unsafe {
        let version =
            std::mem::transmute::<Ptr, DriverGetVersion>(driver_fn(c"cuDriverGetVersion")?);
        let mut ver = 0;
        if version(&mut ver) != SUCCESS {
            return None;
        }
        ver
    };
    let mut k = format!("bpf2ptx jit cache 1: sm_{arch} driver {ver}\n").into_bytes();
    k.extend_from_slice(ptx.as_bytes());
    Some(k)
}

/// The cached cubin of `key` in `dir`, if the entry is there and its key is `key`.
pub fn lookup(dir: &Path, key: &[u8]) -> Option<Vec<u8>> {
    let (k, c) = entry(dir, key);
    (std::fs::read(k).ok()? == key)
        .then(|| std::fs::read(c).ok())
        .flatten()
}

/// Stores `cubin` under `key` in `dir` (created if missing).
pub fn store(dir: &Path, key: &[u8], cubin: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let (k, c) = entry(dir, key);
    let tmp = |p: &Path| p.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(tmp(&c), cubin)?;
    std::fs::rename(tmp(&c), &c)?;
    std::fs::write(tmp(&k), key)?;
    std::fs::rename(tmp(&k), &k)
}

fn entry(dir: &Path, key: &[u8]) -> (PathBuf, PathBuf) {
    let h = format!("{:016x}", fnv1a(key));
    (dir.join(format!("{h}.key")), dir.join(format!("{h}.cubin")))
}

/// Has the driver link NUL-terminated `ptx` into a cubin.
pub fn link(ptx: &[u8]) -> Result<Vec<u8>, String> {
    let f = |n| driver_fn(n).ok_or("the driver lacks cuLink");
    // SAFETY: the driver's linker functions (CUDA 12.0 ABI) on a state they created; the
    // cubin is copied before the state is destroyed.
    unsafe {
        let create = std::mem::transmute::<Ptr, LinkCreate>(f(c"cuLinkCreate")?);
        let add = std::mem::transmute::<Ptr, LinkAddData>(f(c"cuLinkAddData")?);
        let complete = std::mem::transmute::<Ptr, LinkComplete>(f(c"cuLinkComplete")?);
        let destroy = std::mem::transmute::<Ptr, LinkDestroy>(f(c"cuLinkDestroy")?);
        let n: *mut Ptr = std::ptr::null_mut();
        let mut state: Ptr = std::ptr::null_mut();
        let rc = create(0, n.cast(), n, &mut state);
        if rc != SUCCESS {
            return Err(format!("cuLinkCreate: CUresult {rc}"));
        }
        let (mut cubin, mut size): (Ptr, usize) = (std::ptr::null_mut(), 0);
        let mut rc = add(
            state,
            JIT_INPUT_PTX,
            ptx.as_ptr() as *mut c_void,
            ptx.len(),
            c"probes.ptx".as_ptr(),
            0,
            n.cast(),
            n,
        );
        if rc == SUCCESS {
            rc = complete(state, &mut cubin, &mut size);
        }
        let out = (rc == SUCCESS && !cubin.is_null())
            .then(|| std::slice::from_raw_parts(cubin as *const u8, size).to_vec());
        destroy(state);
        out.ok_or(format!(
            "the driver refused the instrumented PTX (CUresult {rc})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_a_different_key_misses() {
        let dir = tempfile::tempdir().unwrap();
        let key = b"bpf2ptx jit cache 1: sm_90 driver 13000\n.version 9.0".to_vec();
        assert_eq!(lookup(dir.path(), &key), None);
        store(dir.path(), &key, b"cubin bytes").unwrap();
        assert_eq!(
            lookup(dir.path(), &key).as_deref(),
            Some(&b"cubin bytes"[..])
        );
        // Same file names, other key (as a hash collision would be): a miss.
        let (k, _) = entry(dir.path(), &key);
        std::fs::write(k, b"another key").unwrap();
        assert_eq!(lookup(dir.path(), &key), None);
    }

    #[test]
    fn fnv1a_known_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
