//! The instrumented copy of an application's image: its PTX (the text, or the entry of
//! a fatbin or cubin the device can run), the probes injected into it, the driver's
//! assembly of the result through the JIT cache, and, in that copy, the handle for each
//! function the application launches. Also PTX handed to the driver's linker, which is
//! instrumented when it is added.
//!
//! Apart from the registry's bookkeeping (`mod.rs`) because this is its one slow path:
//! the only code that runs inject and the JIT, once per image, at the first launch of a
//! matched kernel. The launch path asks it for a copy ([`Session::instrumented`]) and a
//! handle in it ([`Session::twin`]), nothing else.

use super::{Func, Image, Session, Twin, Via};
use crate::driver::*;
use crate::hooks::real;
use crate::jit;
use crate::session::{Event, FAULT_VAR};
use bpf2ptx_backend::inject::fatbin;
use std::ffi::CString;
use std::sync::{Arc, Mutex};
use std::time::Instant;

impl Session {
    pub(super) fn link_ptx(&self, ptx: &[u8], name: &str) -> Option<CString> {
        let label = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.loads += 1;
            format!("link input {} ({name})", st.loads)
        };
        self.instrument_text(ptx, label)
    }

    /// PTX text that something in the process assembles itself (the driver's linker,
    /// Triton's `ptxas`), instrumented now as a module would be: the text to assemble
    /// instead, or `None` when no probe matches a kernel of it or injecting failed
    /// (said, with `label`). The cubin made of it is recognised at its load by its probe
    /// symbols and bound to the process's maps.
    pub(super) fn instrument_text(&self, ptx: &[u8], label: String) -> Option<CString> {
        let text = std::str::from_utf8(ptx.strip_suffix(b"\0").unwrap_or(ptx)).ok()?;
        let t0 = Instant::now();
        let done = match bpf2ptx::inject::inject_checked(
            &self.config.probes,
            text,
            &label,
            &self.inject_options(),
        ) {
            Ok(d) if d.no_match.is_none() => d,
            Ok(_) => return None,
            Err(e) => {
                let reason = format!("inject: {e}");
                self.log
                    .say(&format!("{label}: {reason}; it runs unmodified"));
                self.log.event(&Event::Fallback { label, reason });
                return None;
            }
        };
        self.log.event(&Event::Instrumented {
            label,
            kernels: kernels_of(&done.woven),
            inject_ms: t0.elapsed().as_secs_f64() * 1e3,
            jit_ms: 0.0,
            cached: false,
        });
        CString::new(done.woven.text).ok()
    }

    /// The instrumented copy of `img` (made now if this is the first matched launch, and
    /// bound in the current context); `None` when it failed, which was said once.
    pub(super) fn instrumented(&'static self, img: &Image, kernel: &str) -> Option<Arc<Twin>> {
        let mut slot = img.instrumented.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = slot.as_ref() {
            return r.clone().ok();
        }
        // The first launch of a matched kernel may come inside the application's stream
        // capture (a graph captured from a blocking stream): the JIT and binding must not
        // be refused as unsafe there, which would invalidate the capture.
        let r = {
            let _relaxed = crate::bind::relaxed_capture();
            self.instrument(img, kernel)
        };
        if let Err(reason) = &r {
            self.log
                .say(&format!("{}: {reason}; it runs unmodified", img.label));
            self.log.event(&Event::Fallback {
                label: img.label.clone(),
                reason: reason.clone(),
            });
        }
        *slot = Some(r.clone().map_err(|_| ()));
        if r.is_ok() {
            self.start_snapshots();
        }
        r.ok()
    }

    fn instrument(&'static self, img: &Image, kernel: &str) -> Result<Arc<Twin>, String> {
        let bytes = img.bytes.as_deref().ok_or("its image could not be read")?;
        let device = crate::jit::device_arch();
        let ptx = match app_ptx(bytes, device) {
            Ok(p) => p,
            Err(PtxError::TooNew(archs)) => {
                let dev = device.unwrap_or(0);
                let list: Vec<String> = archs.iter().map(|a| format!("compute_{a}")).collect();
                return Err(format!(
                    "its PTX is for {}, newer than this GPU (sm_{dev}), so kernel {kernel} \
                     cannot be probed; rebuild with -gencode arch=compute_{dev},code=compute_{dev}",
                    list.join(", ")
                ));
            }
            Err(PtxError::NoPtx(sass)) => {
                let archs: Vec<String> = sass.iter().map(|a| format!("sm_{a}")).collect();
                self.log.event(&Event::NoPtx {
                    label: img.label.clone(),
                    kernels: vec![kernel.to_string()],
                    sass: archs.clone(),
                });
                // The hint names the GPU's own architecture where the driver says it: the
                // image's highest SASS may be newer than the GPU.
                let arch = device.or_else(|| sass.iter().max().copied()).unwrap_or(90);
                return Err(format!(
                    "no PTX (SASS for {}), so kernel {kernel} cannot be probed; rebuild with \
                     -gencode arch=compute_{arch},code=compute_{arch} (PyTorch extensions: \
                     TORCH_CUDA_ARCH_LIST=\"{}.{}+PTX\")",
                    archs.join(", "),
                    arch / 10,
                    arch % 10
                ));
            }
            Err(PtxError::Other(e)) => return Err(e),
        };
        let t0 = Instant::now();
        let opts = self.inject_options();
        let done = bpf2ptx::inject::inject_checked(&self.config.probes, &ptx, &img.label, &opts)
            .map_err(|e| format!("inject: {e}"))?;
        let inject_ms = t0.elapsed().as_secs_f64() * 1e3;
        let kernels = kernels_of(&done.woven);
        let t1 = Instant::now();
        let (handle, cached) = self.jit(&done.woven.text, img.library)?;
        let jit_ms = t1.elapsed().as_secs_f64() * 1e3;
        // Bound before any launch of it; a module that cannot be bound runs unmodified.
        let twin = Twin {
            handle,
            library: img.library,
            label: img.label.clone(),
            bindings: Mutex::default(),
        };
        self.bind_twin(&twin)
            .map_err(|e| format!("binding its maps: {e}"))?;
        self.log.event(&Event::Instrumented {
            label: img.label.clone(),
            kernels,
            inject_ms,
            jit_ms,
            cached,
        });
        if self.config.launch_log {
            self.ensure_clock();
        }
        Ok(Arc::new(twin))
    }

    /// Has the driver assemble `ptx` into a module or library, as the original was,
    /// through the JIT cache when the session has one ([`jit`]); also says whether the
    /// cubin came from the cache.
    fn jit(&self, ptx: &str, library: bool) -> Result<(Handle, bool), String> {
        if std::env::var(FAULT_VAR).as_deref() == Ok("jit") {
            return Err(format!("JIT failed (forced by {FAULT_VAR}=jit)"));
        }
        let text = CString::new(ptx).map_err(|_| "the instrumented PTX holds a NUL byte")?;
        let mut cached = false;
        let cache = self
            .config
            .cache
            .as_deref()
            .and_then(|d| Some((d, jit::key(ptx)?)));
        let image = match cache {
            Some((dir, key)) => match jit::lookup(dir, &key) {
                Some(cubin) => {
                    cached = true;
                    cubin
                }
                None => match jit::link(text.as_bytes_with_nul()) {
                    Ok(cubin) => {
                        if let Err(e) = jit::store(dir, &key, &cubin) {
                            self.log.say(&format!("JIT cache {}: {e}", dir.display()));
                        }
                        cubin
                    }
                    // Loading the PTX says why, or works where linking did not.
                    Err(_) => text.as_bytes_with_nul().to_vec(),
                },
            },
            None => text.as_bytes_with_nul().to_vec(),
        };
        let mut h: Ptr = std::ptr::null_mut();
        // SAFETY: the driver's own functions with valid arguments.
        let rc = unsafe {
            if library {
                let n: *mut Ptr = std::ptr::null_mut();
                match real::<LibraryLoadData>(c"cuLibraryLoadData") {
                    Some(f) => f(
                        &mut h,
                        image.as_ptr().cast(),
                        n.cast(),
                        n,
                        0,
                        n.cast(),
                        n,
                        0,
                    ),
                    None => ERROR_INVALID_VALUE,
                }
            } else {
                match real::<ModuleLoadData>(c"cuModuleLoadData") {
                    Some(f) => f(&mut h, image.as_ptr().cast()),
                    None => ERROR_INVALID_VALUE,
                }
            }
        };
        if rc != SUCCESS || h.is_null() {
            return Err(format!(
                "the driver refused the instrumented PTX (CUresult {rc})"
            ));
        }
        Ok((h as Handle, cached))
    }

    /// The handle for `func`'s name in the instrumented copy `h`, of the kind the
    /// application used.
    pub(super) fn twin(&self, h: Handle, func: &Func) -> Option<Handle> {
        let name = CString::new(func.name.as_str()).ok()?;
        let mut out: Ptr = std::ptr::null_mut();
        // SAFETY: the driver's own functions on handles it returned.
        let rc = unsafe {
            match (func.via, func.owner.library) {
                (Via::Module, false) => real::<ModuleGetFunction>(c"cuModuleGetFunction")?(
                    &mut out,
                    h as Ptr,
                    name.as_ptr(),
                ),
                (Via::Module, true) => {
                    let mut m: Ptr = std::ptr::null_mut();
                    let rc = real::<LibraryGetModule>(c"cuLibraryGetModule")?(&mut m, h as Ptr);
                    if rc != SUCCESS {
                        return None;
                    }
                    real::<ModuleGetFunction>(c"cuModuleGetFunction")?(&mut out, m, name.as_ptr())
                }
                (Via::Kernel, _) => real::<LibraryGetKernel>(c"cuLibraryGetKernel")?(
                    &mut out,
                    h as Ptr,
                    name.as_ptr(),
                ),
                (Via::KernelFunction, _) => {
                    let mut k: Ptr = std::ptr::null_mut();
                    let rc = real::<LibraryGetKernel>(c"cuLibraryGetKernel")?(
                        &mut k,
                        h as Ptr,
                        name.as_ptr(),
                    );
                    if rc != SUCCESS {
                        return None;
                    }
                    real::<KernelGetFunction>(c"cuKernelGetFunction")?(&mut out, k)
                }
            }
        };
        if rc != SUCCESS || out.is_null() {
            self.log.say(&format!(
                "{}: kernel {} missing from the instrumented copy (CUresult {rc}); it runs unmodified",
                func.owner.label, func.name
            ));
            return None;
        }
        Some(out as Handle)
    }
}

/// The kernels that got probe sites, sorted, once each.
fn kernels_of(woven: &bpf2ptx_backend::inject::weave::Woven) -> Vec<String> {
    let mut k: Vec<String> = woven.sites.iter().map(|s| s.kernel.clone()).collect();
    k.sort();
    k.dedup();
    k
}

/// Why an image gives no PTX.
#[derive(Debug)]
enum PtxError {
    /// It has only SASS, for these architectures.
    NoPtx(Vec<u32>),
    /// Its PTX is only for these virtual architectures, all newer than the device's.
    TooNew(Vec<u32>),
    /// Anything else.
    Other(String),
}

/// The PTX to instrument of an image: the text itself, or from a fatbin or cubin the PTX
/// of the highest virtual architecture the device (`device`, 90 for sm_90; `None`: not
/// known, any) can run, which is what the driver would JIT when no SASS fits. PTX for a
/// newer architecture only would not load on this GPU: [`PtxError::TooNew`].
fn app_ptx(bytes: &[u8], device: Option<u32>) -> Result<String, PtxError> {
    if !fatbin::is_container(bytes) {
        return String::from_utf8(bytes.to_vec()).map_err(|_| {
            PtxError::Other("the image is neither PTX text nor a fatbin or cubin".into())
        });
    }
    let entries = fatbin::extract_ptx(bytes).map_err(|e| match e {
        fatbin::FatbinError::NoPtx { sass_archs } => PtxError::NoPtx(sass_archs),
        e => PtxError::Other(e.to_string()),
    })?;
    let fits = |a: u32| device.is_none_or(|d| a <= d);
    let Some(best) = entries.iter().map(|e| e.arch).filter(|&a| fits(a)).max() else {
        let mut archs: Vec<u32> = entries.iter().map(|e| e.arch).collect();
        archs.sort_unstable();
        archs.dedup();
        return Err(PtxError::TooNew(archs));
    };
    let mut top: Vec<_> = entries.into_iter().filter(|e| e.arch == best).collect();
    if top.len() > 1 {
        // nvcc 13 keeps a generic compute_90 PTX beside compute_90a's for `-arch=sm_90a`
        // (both entries' headers say 90): the arch-specific one runs only on exactly that
        // compute capability, and is what the application's own SASS was built from there.
        let specific = device == Some(best);
        top.retain(|e| {
            let arch = bpf2ptx::inject::ptx_virtual_arch(&e.ptx).unwrap_or_default();
            let suffixed = arch.ends_with(|c: char| c.is_ascii_alphabetic());
            suffixed == specific
        });
    }
    if top.len() != 1 {
        return Err(PtxError::Other(format!(
            "{} PTX entries for compute_{best} in one image",
            top.len()
        )));
    }
    Ok(top.pop().map(|e| e.ptx).unwrap_or_default())
}

/// Whether a loaded image was instrumented by bpf2ptx already: its PTX has the probe
/// section inject writes, or its PTX or cubin has a map's symbol (`bpf2ptx_map_<name>`,
/// `bpf2ptx_mapref_`, `bpf2ptx_mapdata_`, `bpf2ptx_mapcnt_`; specs/abi.md). Not any
/// `bpf2ptx_` name: an application's own kernel may be called `bpf2ptx_scale_add`.
pub(super) fn holds_probes(image: &[u8]) -> bool {
    const MARKS: [&[u8]; 2] = [b"// ---- bpf2ptx probes", b"bpf2ptx_map"];
    MARKS
        .iter()
        .any(|m| image.windows(m.len()).any(|w| w == *m))
}

#[cfg(test)]
mod probed_tests {
    use super::{app_ptx, holds_probes, PtxError};

    /// A fatbin with PTX for compute_90 and compute_75 (tests/inject/fatbin): the
    /// highest the device can run is taken, and none that fits is `TooNew`.
    #[test]
    fn the_ptx_taken_is_the_highest_the_device_runs() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/inject/fatbin/vecadd.concat.fatbin"
        );
        let bytes = std::fs::read(path).unwrap();
        let target = |d: Option<u32>| match app_ptx(&bytes, d) {
            Ok(p) => p
                .lines()
                .find(|l| l.trim_start().starts_with(".target"))
                .unwrap_or_default()
                .trim()
                .to_string(),
            Err(PtxError::TooNew(a)) => format!("too new {a:?}"),
            Err(PtxError::NoPtx(_)) => "no ptx".into(),
            Err(PtxError::Other(e)) => e,
        };
        assert_eq!(target(None), ".target sm_90");
        assert_eq!(target(Some(90)), ".target sm_90");
        assert_eq!(target(Some(100)), ".target sm_90");
        assert_eq!(target(Some(80)), ".target sm_75");
        assert_eq!(target(Some(70)), "too new [75, 90]");
    }

    /// nvcc 13's `-arch=sm_90a` object (tests/inject/fatbin/vecadd.sm_90a.o): PTX for
    /// compute_90a and a generic compute_90, both headed 90. The arch-specific one on a
    /// device of exactly 9.0, the generic one on a newer device.
    #[test]
    fn the_arch_specific_ptx_is_taken_only_on_its_own_compute_capability() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/inject/fatbin/vecadd.sm_90a.o"
        );
        let bytes = std::fs::read(path).unwrap();
        let target = |d: Option<u32>| {
            let ptx = app_ptx(&bytes, d).unwrap_or_else(|e| panic!("{e:?}"));
            bpf2ptx::inject::ptx_virtual_arch(&ptx).unwrap()
        };
        assert_eq!(target(Some(90)), "compute_90a");
        assert_eq!(target(Some(100)), "compute_90");
        assert_eq!(target(None), "compute_90");
    }

    #[test]
    fn an_app_kernel_named_bpf2ptx_is_not_taken_for_probes() {
        assert!(!holds_probes(b".visible .entry bpf2ptx_scale_add(\n"));
        assert!(holds_probes(
            b".global .align 8 .u64 bpf2ptx_map_counts[8];"
        ));
        assert!(holds_probes(b"\x00bpf2ptx_mapref_ring\x00"));
        assert!(holds_probes(b"ret;\n}\n// ---- bpf2ptx probes ----\n"));
    }
}
