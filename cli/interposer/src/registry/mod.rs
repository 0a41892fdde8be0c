//! What the interposer knows about the application's modules and kernels, and the one
//! decision it makes on every launch: which function to run.
//!
//! ```text
//!  load (module / library)  ──▶ Image { label, bytes copied }      (no work yet)
//!  get function / kernel    ──▶ Func { owner image, name, via }
//!  launch f ──▶ swap[f] known? ──yes──▶ run it
//!                 │ no
//!                 ▼
//!          name matched by a probe? ──no──▶ swap[f] = f
//!                 │ yes
//!                 ▼
//!          owner instrumented? ──first time──▶ PTX of the image ─▶ inject ─▶ driver JIT
//!                 │                              ─▶ bind its maps to the device's set
//!                 │                              (any failure: one line, fallback)
//!                 ▼
//!          swap[f] = the same name in the instrumented module (same kind of handle)
//! ```
//!
//! Modules are instrumented lazily, at the first launch of a matched kernel, so an
//! application that loads a thousand modules pays only for those it probes. Handles are
//! keys only: a module or library unloaded is forgotten, with every function of it, so a
//! handle the driver reuses never finds stale entries.
//!
//! This file is the bookkeeping and the decision above; the two parts that run apart
//! from it have files of their own: making the instrumented copy (`instrument.rs`: PTX,
//! inject, JIT, the twin handles), and the snapshot thread (`snapshots.rs`).

mod instrument;
mod snapshots;

use crate::bind::{global_address, global_symbol, Bound, DeviceSet, MapSets};
use crate::clock::{self, Clock};
use crate::driver::*;
use crate::hostprog::{HostRuntime, LaunchFacts};
use crate::resolve::driver_fn;
use crate::session::{Config, Event, Log, DIR_VAR};
use bpf2ptx::host::{kernel_hash, HostPrograms};
use bpf2ptx::trace::wire::LaunchRecord;
use bpf2ptx_backend::inject::attach::Attach;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::gpu::Dims;
use instrument::holds_probes;
use snapshots::Copier;
use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::os::unix::ffi::OsStrExt as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// How the application got a launchable handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    /// `cuModuleGetFunction` (on a module, or on a library's module).
    Module,
    /// `cuLibraryGetKernel` (a `CUkernel`, which `cuLaunchKernel` also takes).
    Kernel,
    /// `cuKernelGetFunction` of a kernel.
    KernelFunction,
}

/// A loaded module or library.
#[derive(Debug)]
struct Image {
    /// `module N` / `library N`, in load order: how messages name it.
    label: String,
    /// Loaded with `cuLibraryLoad*` (the instrumented copy is loaded the same way).
    library: bool,
    /// The image's bytes; `None` when they could not be read.
    bytes: Option<Vec<u8>>,
    /// The instrumented copy, once a matched kernel of it was launched.
    instrumented: Mutex<Option<Result<Arc<Twin>, ()>>>,
}

/// The copy of an image whose kernels run instrumented (the interposer's, or the
/// application's own when it holds the probes already), and its binding in each context
/// it runs in. A module lives in one context; a library (`cuLibraryLoad*`) is loaded
/// into every context that uses it, each with globals of its own, so its copy is bound
/// once per context: an application that runs one kernel on two devices gets it counted
/// in each device's map set.
#[derive(Debug)]
struct Twin {
    handle: Handle,
    library: bool,
    label: String,
    /// Per context: the binding there, or `None` where it failed (said once; the
    /// application's own kernels run there).
    bindings: Mutex<Vec<(Handle, Option<Instr>)>>,
}

/// A copy's binding in one context: the map set of its device.
#[derive(Debug, Clone)]
struct Instr {
    handle: Handle,
    set: Arc<DeviceSet>,
    bound: Bound,
}

impl Instr {
    /// What each launch of the copy sizes first: its per-unit arrays, if any.
    fn per_unit(&self) -> Option<PerUnit> {
        (!self.bound.per_unit.is_empty()).then(|| (self.set.clone(), self.bound.per_unit.clone()))
    }
}

/// A map set and the per-unit arrays (object map indices) a launch sizes in it.
type PerUnit = (Arc<DeviceSet>, Arc<[usize]>);

/// What was decided for an application handle at its first launch: what to launch, the
/// per-unit arrays to size before it, and what else each launch of it does.
#[derive(Debug, Clone)]
struct Launch {
    /// The handle to launch (the instrumented twin, or the application's own).
    handle: Handle,
    /// The per-unit arrays sized before the launch.
    per_unit: Option<PerUnit>,
    /// The device it runs on (its map set's; 0 when not instrumented).
    device: u32,
    /// Bit set of the host programs that run at its launches.
    host: u64,
    /// The kernel's id (1-based; 0: a handle the interposer never saw named).
    kernel: u32,
    /// FNV-1a of the kernel's name.
    hash: u64,
    /// It runs instrumented: its launches are recorded for the trace events.
    instrumented: bool,
    /// A library's kernel handle (`CUkernel`), launched in whatever context is current:
    /// the decision holds for context `ctx` only, and a launch in another is decided
    /// again (one `cuCtxGetCurrent` per launch of such a handle).
    per_context: bool,
    /// The context the decision was made for (with `per_context`).
    ctx: Handle,
}

impl Launch {
    /// The application's own handle, nothing more.
    fn plain(f: Handle) -> Launch {
        Launch {
            handle: f,
            per_unit: None,
            device: 0,
            host: 0,
            kernel: 0,
            hash: 0,
            instrumented: false,
            per_context: false,
            ctx: 0,
        }
    }
}

/// What a hook knows of a launch besides the function.
#[derive(Debug, Clone, Copy)]
pub struct LaunchArgs {
    /// Grid and block.
    pub dims: Dims,
    /// Dynamic shared memory bytes.
    pub shared: u32,
    /// The stream.
    pub stream: Ptr,
    /// A launch (`true`), or a graph kernel node being set up (`false`: no host
    /// programs, no record; the graph's launches are not seen one by one).
    pub launch: bool,
}

/// Launch records waiting for the snapshot thread, at most this many (then counted as
/// dropped, said at exit).
const MAX_PENDING_LAUNCHES: usize = 1 << 20;

/// A function or kernel handle the application holds.
#[derive(Debug, Clone)]
struct Func {
    owner: Arc<Image>,
    name: String,
    via: Via,
}

#[derive(Debug, Default)]
struct State {
    loads: usize,
    images: HashMap<Handle, Arc<Image>>,
    funcs: HashMap<Handle, Func>,
    /// Decided launches: application handle → handle to launch, and the per-unit arrays to size
    /// before it.
    swap: HashMap<Handle, Launch>,
    /// Decisions for library kernel handles in contexts other than the one of `swap`'s.
    swap_ctx: HashMap<(Handle, Handle), Launch>,
    /// Kernel names launched so far, with their ids (1-based, in order of first launch).
    seen: HashMap<String, u32>,
}

/// The calling thread's current context, if any (on the launch path of library kernel
/// handles: the driver's function is looked up once).
fn current_context() -> Option<Handle> {
    static GET: OnceLock<Option<CtxGetCurrent>> = OnceLock::new();
    let f = (*GET.get_or_init(|| {
        // SAFETY: the driver's function of that name.
        driver_fn(c"cuCtxGetCurrent")
            .map(|p| unsafe { std::mem::transmute::<Ptr, CtxGetCurrent>(p) })
    }))?;
    let mut ctx: Ptr = std::ptr::null_mut();
    // SAFETY: the driver's cuCtxGetCurrent with a valid out pointer.
    let rc = unsafe { f(&mut ctx) };
    (rc == SUCCESS && !ctx.is_null()).then_some(ctx as Handle)
}

/// Makes `ctx` the calling thread's current context (0: nothing to do).
fn set_context(ctx: Handle) {
    if ctx == 0 {
        return;
    }
    if let Some(f) = driver_fn(c"cuCtxSetCurrent") {
        // SAFETY: the driver's function on a context it returned.
        unsafe { std::mem::transmute::<Ptr, CtxSetCurrent>(f)(ctx as Ptr) };
    }
}

/// A trace session: its configuration, the probes' attach points, and the state.
struct Session {
    config: Config,
    log: Log,
    /// The probe object (its maps name what a snapshot copies); leaked once per
    /// process, so the host programs' interpreter may borrow it for the process's life.
    obj: &'static Object,
    attaches: Vec<Attach>,
    /// The host-side programs, if the object has any.
    host: Option<HostRuntime>,
    /// The host/GPU clock offset.
    clock: Clock,
    /// The clock was measured once (or that failed and was said).
    clock_tried: AtomicBool,
    /// Launch numbers given so far.
    seq: AtomicU64,
    /// Launch records not yet written (`config.launch_log`).
    launches: Mutex<Vec<LaunchRecord>>,
    /// Launch records dropped because the snapshot thread fell behind.
    launches_dropped: AtomicU64,
    /// A captured launch skipped its host programs (said once).
    said_capture: AtomicBool,
    /// When the clock was last measured (ns since the start), for the rechecks.
    clock_at: AtomicU64,
    state: Mutex<State>,
    /// The maps: one instance per process and device ([`crate::bind`]).
    sets: MapSets,
    /// Snapshots: started at the first instrumentation (or the first launch that runs
    /// host programs or is recorded).
    copier: Mutex<Copier>,
    /// The last snapshot was taken (at exit): periodic ones stop, so that one racing the
    /// exit (with the CUDA runtime tearing down) never replaces it.
    finished: std::sync::atomic::AtomicBool,
    started: Instant,
}

/// The session, started on first use; `None` outside `bpf2ptx trace` or when it cannot
/// start (said once).
fn session() -> Option<&'static Session> {
    static S: OnceLock<Option<Session>> = OnceLock::new();
    S.get_or_init(|| {
        let session_dir = std::path::PathBuf::from(std::env::var_os(DIR_VAR)?);
        // This process's own folder: every process of the traced tree inherits the
        // session folder, and each must write files of its own (bpf2ptx::trace::wire).
        let dir = match Log::process_dir(&session_dir) {
            Ok(d) => d,
            Err(e) => {
                eprintln!("bpf2ptx trace: session folder: {e}; the application runs unmodified");
                return None;
            }
        };
        let log = Log::new(&dir);
        let start = || -> Result<Session, String> {
            let config = Config::read(&session_dir)?;
            let obj = bpf2ptx::load_path(&config.probes).map_err(|e| e.to_string())?;
            let obj: &'static Object = Box::leak(Box::new(obj));
            let attaches = obj
                .programs
                .iter()
                .filter_map(|p| Attach::from_section(&p.section))
                .collect();
            let progs = HostPrograms::load(obj, &config.maps).map_err(|e| e.to_string())?;
            let host = (!progs.programs.is_empty()).then(|| HostRuntime::new(obj, progs));
            Ok(Session {
                config,
                log: Log::new(&dir),
                obj,
                attaches,
                host,
                clock: Clock::default(),
                clock_tried: AtomicBool::new(false),
                seq: AtomicU64::new(0),
                launches: Mutex::new(Vec::new()),
                launches_dropped: AtomicU64::new(0),
                said_capture: AtomicBool::new(false),
                clock_at: AtomicU64::new(0),
                state: Mutex::default(),
                sets: MapSets::default(),
                copier: Mutex::default(),
                finished: Default::default(),
                started: Instant::now(),
            })
        };
        match start() {
            Ok(s) => Some(s),
            Err(e) => {
                log.say(&format!(
                    "not started: {e}; the application runs unmodified"
                ));
                None
            }
        }
    })
    .as_ref()
}

/// Runs `f` for the session, if any; a panic inside is caught (and said), never unwound
/// into the application.
fn with_session<T>(fallback: T, f: impl FnOnce(&'static Session) -> T) -> T {
    let Some(s) = session() else {
        return fallback;
    };
    match catch_unwind(AssertUnwindSafe(|| f(s))) {
        Ok(v) => v,
        Err(_) => {
            s.log
                .say("internal error (a panic); this call runs unmodified");
            fallback
        }
    }
}

/// A module or library was loaded from memory.
///
/// # Safety
/// `image` is what the application passed a successful load.
pub unsafe fn loaded_image(handle: Ptr, image: *const u8, library: bool) {
    with_session((), |s| {
        // SAFETY: the driver just read the same image.
        let bytes = unsafe { crate::image::copy_image(image) };
        s.add_image(handle, bytes, library);
    })
}

/// A module or library was loaded from a file.
///
/// # Safety
/// `path` is what the application passed a successful load.
pub unsafe fn loaded_file(handle: Ptr, path: *const c_char, library: bool) {
    with_session((), |s| {
        let bytes = (!path.is_null())
            // SAFETY: a NUL-terminated path the driver just opened.
            .then(|| unsafe { CStr::from_ptr(path) })
            .and_then(|p| std::fs::read(std::ffi::OsStr::from_bytes(p.to_bytes())).ok());
        s.add_image(handle, bytes, library);
    })
}

/// PTX handed to the driver's linker (`cuLinkAddData`, `cuLinkAddFile`), instrumented now:
/// the linker's output holds no PTX left to instrument when its kernels launch. The text
/// to link instead, when a probe matches one of its kernels. The module the linked cubin
/// is then loaded as is recognised by its probe symbols and not instrumented again.
///
/// # Safety
/// `name` is null or a NUL-terminated name.
pub unsafe fn linked_ptx(ptx: &[u8], name: *const c_char) -> Option<CString> {
    with_session(None, |s| {
        let name = (!name.is_null())
            // SAFETY: as the caller's contract.
            .then(|| {
                unsafe { CStr::from_ptr(name) }
                    .to_string_lossy()
                    .into_owned()
            });
        s.link_ptx(ptx, name.as_deref().unwrap_or("unnamed"))
    })
}

/// PTX a Python JIT (Triton) generated and is about to assemble with its own `ptxas`,
/// instrumented now (`bpf2ptx trace`'s Python start-up hook hands it over through
/// [`crate::python`]): the text to assemble instead, when a probe matches its kernel.
/// Labelled `triton kernel NAME` in what the session says.
pub fn jit_ptx(ptx: &[u8], name: &str) -> Option<CString> {
    with_session(None, |s| {
        s.instrument_text(ptx, format!("triton kernel {name}"))
    })
}

/// A module or library is being unloaded: forget it and its functions (and, for a module
/// bound to a map set itself, its descriptors).
pub fn unloaded(handle: Ptr) {
    with_session((), |s| {
        s.sets.unloaded(handle as Handle);
        let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(img) = st.images.remove(&(handle as Handle)) {
            let gone: Vec<Handle> = st
                .funcs
                .iter()
                .filter(|(_, f)| Arc::ptr_eq(&f.owner, &img))
                .map(|(h, _)| *h)
                .collect();
            for h in &gone {
                st.funcs.remove(h);
                st.swap.remove(h);
            }
            st.swap_ctx.retain(|(f, _), _| !gone.contains(f));
            st.images.retain(|_, i| !Arc::ptr_eq(i, &img));
        }
    })
}

/// `func` names `name` in `owner` (a module or library).
///
/// # Safety
/// `name` is the NUL-terminated name the application passed a successful lookup.
pub unsafe fn named(func: Ptr, owner: Ptr, name: *const c_char, via: Via) {
    with_session((), |s| {
        // SAFETY: as the caller's contract.
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(owner) = st.images.get(&(owner as Handle)).cloned() {
            st.swap.remove(&(func as Handle));
            st.swap_ctx.retain(|(f, _), _| *f != func as Handle);
            st.funcs.insert(func as Handle, Func { owner, name, via });
        }
    })
}

/// `module` is the module of library `lib` (`cuLibraryGetModule`).
pub fn alias(module: Ptr, lib: Ptr) {
    with_session((), |s| {
        let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(img) = st.images.get(&(lib as Handle)).cloned() {
            st.images.insert(module as Handle, img);
        }
    })
}

/// `func` is kernel `kernel`'s function in the current context.
pub fn kernel_function(func: Ptr, kernel: Ptr) {
    with_session((), |s| {
        let mut st = s.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = st.funcs.get(&(kernel as Handle)).cloned() {
            st.swap.remove(&(func as Handle));
            st.swap_ctx.retain(|(f, _), _| *f != func as Handle);
            st.funcs.insert(
                func as Handle,
                Func {
                    via: Via::KernelFunction,
                    ..k
                },
            );
        }
    })
}

/// The function to launch for the application's `f`: its instrumented twin when a probe
/// matches it and instrumenting worked (with its per-unit arrays sized for the launch),
/// else `f`. A launch (not a graph node) also runs the host programs that match the
/// kernel and is recorded for the trace events, both before it reaches the driver.
pub fn launchable(f: Ptr, args: LaunchArgs) -> Ptr {
    with_session(f, |s| {
        let d = s.launchable(f as Handle);
        if let Some((set, maps)) = &d.per_unit {
            if let Err(e) = set.before_launch(s.obj, maps, args.dims, &|| s.capturing(args.stream))
            {
                s.log.say(&format!(
                    "{e}; lookups past the units it holds return NULL in this launch"
                ));
            }
        }
        let record = d.instrumented && s.config.launch_log;
        if args.launch && (d.host != 0 || record) {
            s.launched(f as Handle, &d, &args, record);
        } else if args.launch && d.instrumented && s.pushes() && !s.capturing(args.stream) {
            s.push_shared(args.stream);
        }
        d.handle as Ptr
    })
}

impl Session {
    fn add_image(&'static self, handle: Ptr, bytes: Option<Vec<u8>>, library: bool) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        st.loads += 1;
        let label = format!(
            "{} {}",
            if library { "library" } else { "module" },
            st.loads
        );
        self.log.event(&Event::Loaded {
            label: label.clone(),
            bytes: bytes.as_ref().map_or(0, Vec::len),
        });
        // A cubin linked from PTX the interposer instrumented holds the probes already.
        let probed = bytes.as_deref().is_some_and(holds_probes);
        // Its maps are bound to the process's instances as an instrumented copy's are; a
        // failure leaves it with maps of its own (the rebinding lowering works unbound),
        // which the snapshot does not see: said.
        let twin = probed.then(|| {
            let twin = Twin {
                handle: handle as Handle,
                library,
                label: label.clone(),
                bindings: Mutex::default(),
            };
            if let Err(e) = self.bind_twin(&twin) {
                self.log.say(&format!(
                    "{label}: {e}; its probes use maps of their own, not in the snapshot"
                ));
            }
            Ok(Arc::new(twin))
        });
        st.images.insert(
            handle as Handle,
            Arc::new(Image {
                label,
                library,
                bytes,
                instrumented: Mutex::new(twin),
            }),
        );
        drop(st);
        if probed {
            self.start_snapshots();
        }
    }

    /// Binds instrumented module `h` (loaded in the current context) to the map set of
    /// its device ([`crate::bind`]), and the maps host programs share to their pinned
    /// storage, before any launch of it.
    fn bind(&self, h: Handle, library: bool, label: &str) -> Result<Instr, String> {
        // The first launch of a module may come inside the application's stream capture.
        let _relaxed = crate::bind::relaxed_capture();
        let set = self.sets.current().map_err(|e| e.to_string())?;
        // The maps host programs share in pinned storage, when it exists (else they are
        // the set's, as any map). The pushed ones are the set's: the GPU reads them from
        // device memory.
        let skip: Vec<usize> = self
            .host
            .as_ref()
            .and_then(|r| r.shared(&self.log))
            .map_or_else(Vec::new, |s| {
                s.maps
                    .iter()
                    .filter(|m| !m.pushed)
                    .map(|m| m.index)
                    .collect()
            });
        let bound = set
            .bind(
                self.obj,
                h,
                label,
                &mut |sym| global_symbol(h, library, sym),
                &skip,
            )
            .map_err(|e| e.to_string())?;
        self.bind_shared(&set, h, library);
        Ok(Instr {
            handle: h,
            set,
            bound,
        })
    }

    /// `twin`'s binding in the current context, made now if it has none there yet (a
    /// failure is recorded, and returned the first time only).
    fn bind_twin(&self, twin: &Twin) -> Result<Option<Instr>, String> {
        let ctx = current_context().unwrap_or(0);
        let mut b = twin.bindings.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, i)) = b.iter().find(|(c, _)| *c == ctx) {
            return Ok(i.clone());
        }
        let r = self.bind(twin.handle, twin.library, &twin.label);
        b.push((ctx, r.as_ref().ok().cloned()));
        r.map(Some)
    }

    /// Points the shared maps' descriptors in instrumented module `h` at the storage the
    /// host programs use (allocated now if this is the first need). A failure is said;
    /// the module then keeps its own copy of those maps.
    fn bind_shared(&self, set: &DeviceSet, h: Handle, library: bool) {
        let Some(shared) = self.host.as_ref().and_then(|r| r.shared(&self.log)) else {
            return;
        };
        let write = |map: &str, at: u64, words: &[u64]| {
            set.write_words(map, at, words).map_err(|e| e.to_string())
        };
        if let Err(e) = shared.bind(|sym| global_address(h, library, sym), write) {
            self.log.say(&format!(
                "{e}; that module's probes use their own copy of the map"
            ));
        }
    }

    /// The options `bpf2ptx inject` would be given: the session's map options, and
    /// pinned host memory for the maps host programs share.
    fn inject_options(&self) -> bpf2ptx::inject::Options {
        bpf2ptx::inject::Options {
            maps: match &self.host {
                Some(h) => h.progs.map_options(self.obj, &self.config.maps, h.pushed()),
                None => self.config.maps.clone(),
            },
            loop_budget: self.config.loop_budget,
            // One instance of each map per process and device, bound into every module.
            rebind_maps: true,
            granularity: match self.config.granularity.as_deref() {
                Some("warp") => bpf2ptx_backend::back::ptx::Granularity::Warp,
                Some("block") => bpf2ptx_backend::back::ptx::Granularity::Block,
                _ => bpf2ptx_backend::back::ptx::Granularity::Thread,
            },
            ..Default::default()
        }
    }

    fn matched(&self, name: &str) -> bool {
        self.attaches.iter().any(|a| a.matches(name))
    }

    fn launchable(&'static self, f: Handle) -> Launch {
        let (func, plain, ctx) = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let mut ctx = 0;
            if let Some(g) = st.swap.get(&f) {
                if !g.per_context {
                    return g.clone();
                }
                ctx = current_context().unwrap_or(0);
                if g.ctx == ctx {
                    return g.clone();
                }
                if let Some(g) = st.swap_ctx.get(&(f, ctx)) {
                    return g.clone();
                }
            }
            let Some(func) = st.funcs.get(&f).cloned() else {
                st.swap.insert(f, Launch::plain(f));
                return Launch::plain(f);
            };
            let matched = self.matched(&func.name);
            let next = st.seen.len() as u32 + 1;
            let kernel = *st.seen.entry(func.name.clone()).or_insert_with(|| {
                self.log.event(&Event::Kernel {
                    name: func.name.clone(),
                    matched,
                    id: next,
                });
                next
            });
            let plain = Launch {
                handle: f,
                per_unit: None,
                device: 0,
                host: self
                    .host
                    .as_ref()
                    .map_or(0, |h| h.progs.matching(&func.name)),
                kernel,
                hash: kernel_hash(&func.name),
                instrumented: false,
                per_context: false,
                ctx: 0,
            };
            if !matched {
                st.swap.insert(f, plain.clone());
                return plain;
            }
            if func.via == Via::Kernel && func.owner.library && ctx == 0 {
                ctx = current_context().unwrap_or(0);
            }
            (func, plain, ctx)
        };
        // Instrumenting (inject and JIT) runs outside the state lock: other threads'
        // launches of decided functions go on meanwhile; the image's own lock makes one
        // thread do it.
        let per_context = func.via == Via::Kernel && func.owner.library;
        let plain = Launch {
            per_context,
            ctx,
            ..plain
        };
        let g = self
            .instrumented(&func.owner, &func.name)
            .and_then(|t| {
                // Bound in this context (a library's copy in a context it has not run in
                // yet is bound now; a failure there was said and runs the app's own).
                let i = match self.bind_twin(&t) {
                    Ok(i) => i,
                    Err(e) => {
                        self.log.say(&format!(
                            "{}: {e}; its kernels run unmodified in this context",
                            t.label
                        ));
                        None
                    }
                }?;
                Some(Launch {
                    handle: self.twin(i.handle, &func)?,
                    per_unit: i.per_unit(),
                    device: i.set.device,
                    instrumented: true,
                    ..plain.clone()
                })
            })
            .unwrap_or(plain);
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if per_context && st.swap.contains_key(&f) {
            st.swap_ctx.insert((f, ctx), g.clone());
        } else {
            st.swap.insert(f, g.clone());
        }
        g
    }

    /// A launch of `f` that runs host programs or is recorded: numbered, timed on the
    /// GPU's timeline, its host programs run, its record kept. Launches captured into a
    /// graph are skipped (they run when the graph is launched, maybe many times; said
    /// once).
    fn launched(&'static self, f: Handle, d: &Launch, args: &LaunchArgs, record: bool) {
        if self.capturing(args.stream) {
            if !self.said_capture.swap(true, Relaxed) {
                self.log.say(
                    "launches captured into CUDA graphs run no host programs and are not in the trace events",
                );
            }
            return;
        }
        self.ensure_clock();
        let seq = self.seq.fetch_add(1, Relaxed) + 1;
        let facts = LaunchFacts {
            grid: args.dims.grid,
            block: args.dims.block,
            shared: args.shared,
            stream: args.stream as u64,
            func: f as u64,
            kernel: d.kernel,
            kernel_hash: d.hash,
            seq,
            host_ns: self.clock.now(),
        };
        if let Some(h) = self.host.as_ref().filter(|_| d.host != 0) {
            h.run(d.host, &facts, &self.clock, &self.log);
        }
        if d.instrumented && self.pushes() {
            self.push_shared(args.stream);
        }
        if record {
            let mut pending = self.launches.lock().unwrap_or_else(|e| e.into_inner());
            if pending.len() < MAX_PENDING_LAUNCHES {
                pending.push(LaunchRecord {
                    seq,
                    kernel: d.kernel,
                    device: d.device,
                    stream: facts.stream,
                    grid: facts.grid,
                    block: facts.block,
                    host_ns: facts.host_ns,
                });
            } else {
                self.launches_dropped.fetch_add(1, Relaxed);
            }
        }
    }

    /// Whether the session has pushed maps ([`HostRuntime::pushed`]).
    fn pushes(&self) -> bool {
        self.host.as_ref().is_some_and(|h| !h.pushed().is_empty())
    }

    /// The pushed maps' words into the current context's set, on `stream` before the
    /// launch that follows (at every launch of an instrumented kernel, not captured, so a
    /// kernel on any device reads the host programs' values as of its launch). A `_ptsz`
    /// launch on stream 0 (the per-thread default stream) gets them on the legacy default
    /// stream, which every blocking stream waits for: still before it.
    fn push_shared(&self, stream: Ptr) {
        if let (Some(h), Ok(set)) = (self.host.as_ref(), self.sets.current()) {
            h.push(&set, stream, &self.log);
        }
    }

    /// Whether `stream` is capturing into a graph (`cuStreamIsCapturing`); `false` when
    /// the driver cannot say.
    fn capturing(&self, stream: Ptr) -> bool {
        static IS_CAPTURING: OnceLock<Option<StreamIsCapturing>> = OnceLock::new();
        let Some(f) = IS_CAPTURING.get_or_init(|| {
            // SAFETY: the driver's function of that name.
            driver_fn(c"cuStreamIsCapturing")
                .map(|p| unsafe { std::mem::transmute::<Ptr, StreamIsCapturing>(p) })
        }) else {
            return false;
        };
        let mut status = 0;
        // SAFETY: the application's stream handle, a valid out pointer.
        unsafe { f(stream, &mut status) == SUCCESS && status != 0 }
    }

    /// Measures the host/GPU clock offset the first time a launch needs it (in the
    /// launch's context), and starts the snapshot thread, which rechecks it and writes
    /// the launch records and shared maps.
    fn ensure_clock(&'static self) {
        if self.clock_tried.swap(true, Relaxed) {
            return;
        }
        self.measure_clock();
        self.start_snapshots();
    }

    /// One measurement of the clock offset, said in the events (a failure on stderr,
    /// once: host times then stay `CLOCK_MONOTONIC`).
    fn measure_clock(&self) {
        let at_ns = self.started.elapsed().as_nanos() as u64;
        match self.clock.measure() {
            Ok(o) => {
                self.clock_at.store(at_ns, Relaxed);
                self.log.event(&Event::Clock {
                    offset_ns: o.offset_ns,
                    spread_ns: o.spread_ns,
                    start_ns: self.clock.at(clock::monotonic_ns()) - at_ns,
                    at_ns,
                });
            }
            Err(e) if !self.clock.measured() => {
                self.clock_at.store(u64::MAX, Relaxed);
                self.log.say(&format!(
                    "host/GPU clock offset not measured ({e}); host times are CLOCK_MONOTONIC"
                ))
            }
            Err(_) => {}
        }
    }
}
