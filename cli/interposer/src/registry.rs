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

use crate::bind::{global_address, global_symbol, Bound, DeviceSet, MapSets};
use crate::clock::{self, Clock};
use crate::driver::*;
use crate::hooks::real;
use crate::hostprog::{HostRuntime, LaunchFacts};
use crate::jit;
use crate::resolve::driver_fn;
use crate::session::{Config, Event, Log, DIR_VAR, FAULT_VAR};
use crate::snapshot::{self, DeviceMaps, Reader, Snapshot};
use bpf2ptx::host::{kernel_hash, HostPrograms};
use bpf2ptx::trace::wire::{append_launches, LaunchRecord};
use bpf2ptx_backend::inject::attach::Attach;
use bpf2ptx_backend::inject::fatbin;
use bpf2ptx_compiler::program::Object;
use bpf2ptx_loader::gpu::Dims;
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

/// The snapshot thread's side: whether snapshots started, and per map set's context the
/// reader made there (a stream of its own).
#[derive(Default)]
struct Copier {
    started: bool,
    /// The context current where snapshots started (the clock's rechecks run there).
    home: Handle,
    readers: Vec<(Handle, Option<Reader>)>,
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
            if let Err(e) = set.before_launch(s.obj, maps, args.dims) {
                s.log.say(&format!(
                    "{e}; lookups past the units it holds return NULL in this launch"
                ));
            }
        }
        let record = d.instrumented && s.config.launch_log;
        if args.launch && (d.host != 0 || record) {
            s.launched(f as Handle, &d, &args, record);
        }
        d.handle as Ptr
    })
}

impl Session {
    fn link_ptx(&self, ptx: &[u8], name: &str) -> Option<CString> {
        let label = {
            let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
            st.loads += 1;
            format!("link input {} ({name})", st.loads)
        };
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
        let set = self.sets.current().map_err(|e| e.to_string())?;
        // The maps host programs share, when their pinned storage exists (else they are
        // the set's, as any map).
        let skip: Vec<usize> = self
            .host
            .as_ref()
            .and_then(|r| r.shared(&self.log))
            .map_or_else(Vec::new, |s| s.maps.iter().map(|m| m.index).collect());
        let bound = set
            .bind(
                self.obj,
                h,
                label,
                &mut |sym| global_symbol(h, library, sym),
                &skip,
            )
            .map_err(|e| e.to_string())?;
        self.bind_shared(h, library);
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
    fn bind_shared(&self, h: Handle, library: bool) {
        let Some(shared) = self.host.as_ref().and_then(|r| r.shared(&self.log)) else {
            return;
        };
        if let Err(e) = shared.bind(|sym| global_address(h, library, sym)) {
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
                Some(h) => h.progs.map_options(self.obj, &self.config.maps),
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

    /// The instrumented copy of `img` (made now if this is the first matched launch, and
    /// bound in the current context); `None` when it failed, which was said once.
    fn instrumented(&'static self, img: &Image, kernel: &str) -> Option<Arc<Twin>> {
        let mut slot = img.instrumented.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = slot.as_ref() {
            return r.clone().ok();
        }
        let r = self.instrument(img, kernel);
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
    fn twin(&self, h: Handle, func: &Func) -> Option<Handle> {
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

impl Session {
    /// At the first instrumentation (or launch that runs host programs or is recorded):
    /// notes the current context (where the clock is rechecked), registers the last
    /// snapshot at exit (now, after the CUDA runtime registered its own teardown, so that
    /// ours runs first), and starts the periodic snapshots.
    fn start_snapshots(&'static self) {
        let mut copier = self.copier.lock().unwrap_or_else(|e| e.into_inner());
        if copier.started {
            return;
        }
        copier.started = true;
        copier.home = current_context().unwrap_or(0);
        extern "C" fn last_snapshot() {
            if let Some(s) = session() {
                let _ = catch_unwind(|| s.snapshot(true));
            }
        }
        // SAFETY: registering a plain extern "C" function.
        unsafe { libc::atexit(last_snapshot) };
        if self.config.interval_ms > 0 {
            let every = std::time::Duration::from_millis(self.config.interval_ms);
            let _ = std::thread::Builder::new()
                .name("bpf2ptx-snapshots".into())
                .spawn(move || loop {
                    std::thread::sleep(every);
                    let _ = catch_unwind(AssertUnwindSafe(|| self.snapshot(false)));
                });
        }
    }

    /// Copies every map set's maps (one per device) into `snapshot.json`, each in its
    /// context on a stream of its own, and the maps host programs share. `last`: at exit,
    /// after waiting for each context's work. The calling thread's context is restored.
    fn snapshot(&self, last: bool) {
        let mut copier = self.copier.lock().unwrap_or_else(|e| e.into_inner());
        // A child forked after the session started has its parent's maps, not its own.
        if !copier.started || !self.log.owned() {
            return;
        }
        // Under the copier's lock: a periodic snapshot either ran before the last one or
        // sees the flag.
        use std::sync::atomic::Ordering::SeqCst;
        if self.finished.load(SeqCst) || last && self.finished.swap(true, SeqCst) {
            return;
        }
        let before = current_context();
        let now = self.started.elapsed().as_nanos() as u64;
        let measured = self.clock_at.load(Relaxed);
        if !last
            && measured != u64::MAX
            && self.clock.measured()
            && now.saturating_sub(measured) >= clock::RECHECK.as_nanos() as u64
        {
            set_context(copier.home);
            self.measure_clock();
        }
        let mut devices = Vec::new();
        for set in self.sets.all() {
            set_context(set.ctx);
            if last {
                // SAFETY: the driver's function, in the set's context.
                unsafe {
                    if let Some(sync) = driver_fn(c"cuCtxSynchronize") {
                        std::mem::transmute::<Ptr, CtxSynchronize>(sync)();
                    }
                }
            }
            let at = match copier.readers.iter().position(|r| r.0 == set.ctx) {
                Some(at) => at,
                None => {
                    let reader = Reader::new();
                    if reader.is_none() {
                        self.log.say(&format!(
                            "device {}: map snapshots unavailable (the driver lacks stream copies)",
                            set.device
                        ));
                    }
                    copier.readers.push((set.ctx, reader));
                    copier.readers.len() - 1
                }
            };
            let Some(reader) = copier.readers[at].1 else {
                continue;
            };
            let (modules, maps) = set.raw_maps(self.obj, &|a, n| reader.copy(a, n));
            let own = set.module_output(&|a, n| reader.copy(a, n));
            devices.push(DeviceMaps {
                device: set.device,
                context: set.context,
                modules,
                maps,
                printk: own
                    .printk
                    .into_iter()
                    .map(|(module, line)| snapshot::PrintkLine { module, line })
                    .collect(),
                printk_dropped: own.printk_dropped,
                loop_budget: own.loop_budget,
            });
        }
        if let Some(ctx) = before {
            set_context(ctx);
        }
        let shared = self.host.as_ref().and_then(HostRuntime::shared_now);
        let snap = Snapshot {
            time_ns: now,
            last,
            devices,
            shared: shared.map_or_else(Vec::new, |s| {
                s.maps
                    .iter()
                    .map(|m| snapshot::RawMap {
                        name: m.name.clone(),
                        desc: m.desc.to_vec(),
                        data: snapshot::hex(&m.bytes_now()),
                        counts: None,
                        counters: None,
                    })
                    .collect()
            }),
        };
        if let Err(e) = snapshot::write(self.log.dir(), &snap) {
            self.log.say(&format!("snapshot not written: {e}"));
        }
        self.write_launches(last);
    }

    /// Appends the launch records kept since the last call to `launches.jsonl`; at the
    /// end, says how many were dropped.
    fn write_launches(&self, last: bool) {
        let records = std::mem::take(&mut *self.launches.lock().unwrap_or_else(|e| e.into_inner()));
        if !records.is_empty() {
            if let Err(e) = append_launches(self.log.dir(), &records) {
                self.log.say(&format!("launch records not written: {e}"));
            }
        }
        let dropped = self.launches_dropped.load(Relaxed);
        if last && dropped > 0 {
            self.log.say(&format!(
                "{dropped} launch records dropped (more than {MAX_PENDING_LAUNCHES} between snapshots)"
            ));
        }
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
fn holds_probes(image: &[u8]) -> bool {
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
