//! Random kernels and random probes for the fused-versus-unfused tests (tests/tests/fuse.rs):
//! PTX kernels with global, shared, local, generic, vector and atomic accesses, divergent
//! branches, loops with per-thread trip counts, early `ret`/`exit`, `trap`, calls of a
//! function that may `exit`, and block barriers; and probe objects of every kind fusion
//! must handle or leave alone, at random attach points and granularities:
//!
//! | kind | what it does | fusion |
//! |---|---|---|
//! | `Count` | adds a constant, or the access size, to a slot of `hist` the site's context fixes | accumulated |
//! | `Plain` | the same as `*v += x` (a plain update the verifier fuses into an atomic add) | accumulated |
//! | `Global` | adds to a `.bss` counter | accumulated |
//! | `AddrKey` | adds to a slot of `hist` chosen by the access's address | not (the key is not the site's) |
//! | `Reader` | reads a word of `other` and adds it to another | `other` read: not accumulated |
//! | `Store` | entry: stores a value of the thread to `start[gtid]` or `start[gtid >> 5]`, or to `tstate[0]` | forwarded |
//! | `Load` | loads the slot back and counts it in `other` by its low bits | forwarded load |
//! | `Clobber` | stores to the thread's `start` slot at memory accesses | forwarding off (another writer) |
//! | `Ender` | ends its thread (`gpu_exit`) at some accesses | accumulators flushed before it |
//!
//! Everything is a function of a seed, so a failing seed names its case.

use crate::random::Rng;
use bpf2ptx_compiler::program::Object;
use std::fmt::Write as _;

/// Bytes of the kernel's one buffer: 256 words every thread may load and add to
/// atomically, then one word per thread that only that thread stores to (at most 3 blocks
/// of 96 threads), so the buffer's final contents do not depend on the order threads run
/// in: two lowerings that run them in other orders must leave the same bytes.
pub const BUF: u64 = 4096;

/// A random kernel `k(.param .u64 k_buf, .param .u32 k_n)` and its block size.
pub fn kernel(seed: u64) -> (String, u32) {
    let mut g = Gen {
        r: Rng::new(seed),
        s: String::new(),
        labels: 0,
        exit_k: 0,
    };
    g.exit_k = g.r.below(64) as u32;
    let block = [32u32, 48, 64, 96][g.r.below(4) as usize];
    let mut body = String::new();
    std::mem::swap(&mut g.s, &mut body);
    let n = 3 + g.r.below(6) as usize;
    for _ in 0..n {
        g.statement(0);
    }
    std::mem::swap(&mut g.s, &mut body);
    // sm_80 gives the probes sm_80's flush (a warp's sum by `redux.sync`).
    let target = [70, 80][g.r.below(2) as usize];
    let text = format!(
        ".version 7.0\n.target sm_{target}\n.address_size 64\n\n\
         .func (.param .b32 helper_ret) helper(.param .b64 helper_buf, .param .b32 helper_x)\n{{\n\
         \t.reg .pred %p<2>;\n\t.reg .b32 %r<4>;\n\t.reg .b64 %rd<4>;\n\
         \tld.param.u64 %rd1, [helper_buf];\n\tld.param.u32 %r1, [helper_x];\n\
         \tadd.u32 %r2, %r1, 256;\n\tmul.wide.u32 %rd2, %r2, 4;\n\tadd.s64 %rd3, %rd1, %rd2;\n\
         \tst.global.u32 [%rd3], %r1;\n\tand.b32 %r2, %r1, 63;\n\
         \tsetp.eq.u32 %p1, %r2, {};\n\t@%p1 exit;\n\
         \tadd.u32 %r3, %r1, 1;\n\tst.param.b32 [helper_ret], %r3;\n\tret;\n}}\n\n\
         .visible .entry k(.param .u64 k_buf, .param .u32 k_n)\n{{\n\
         \t.reg .pred %p<16>;\n\t.reg .b32 %r<64>;\n\t.reg .b64 %rd<16>;\n\
         \t.shared .align 8 .b8 sh[512];\n\t.local .align 8 .b8 loc[32];\n\n\
         \tld.param.u64 %rd1, [k_buf];\n\tcvta.to.global.u64 %rd1, %rd1;\n\
         \tld.param.u32 %r1, [k_n];\n\tmov.u32 %r2, %tid.x;\n\tmov.u32 %r3, %ctaid.x;\n\
         \tmov.u32 %r4, %ntid.x;\n\tmad.lo.s32 %r5, %r3, %r4, %r2;\n{body}\tret;\n}}\n",
        g.exit_k
    );
    (text, block)
}

struct Gen {
    r: Rng,
    s: String,
    labels: usize,
    exit_k: u32,
}

impl Gen {
    fn l(&mut self, line: &str) {
        self.s.push('\t');
        self.s.push_str(line);
        self.s.push('\n');
    }

    fn label(&mut self) -> String {
        self.labels += 1;
        format!("$L_k{}", self.labels)
    }

    /// `%rd6` = the buffer address of word `(gtid * c1 + c2) & mask`.
    fn address(&mut self, mask: u32) {
        let (c1, c2) = (1 + self.r.below(7), self.r.below(300));
        self.l(&format!("mul.lo.s32 %r10, %r5, {c1};"));
        self.l(&format!("add.s32 %r10, %r10, {c2};"));
        self.l(&format!("and.b32 %r10, %r10, {mask};"));
        self.l("mul.wide.u32 %rd5, %r10, 4;");
        self.l("add.s64 %rd6, %rd1, %rd5;");
    }

    fn statement(&mut self, depth: usize) {
        let choice = self.r.below(if depth < 2 { 20 } else { 11 });
        let v = 20 + self.r.below(20);
        let p = 1 + depth * 4 + self.r.below(4) as usize;
        match choice {
            0 | 1 => {
                self.address(255);
                self.l(&format!("ld.global.u32 %r{v}, [%rd6];"));
            }
            2 => {
                // The thread's own word.
                self.l("add.s32 %r13, %r5, 256;");
                self.l("mul.wide.u32 %rd8, %r13, 4;");
                self.l("add.s64 %rd8, %rd1, %rd8;");
                self.l("st.global.u32 [%rd8], %r5;");
            }
            3 => {
                self.address(255);
                if self.r.below(2) == 0 {
                    self.l(&format!("atom.global.add.u32 %r{v}, [%rd6], 1;"));
                } else {
                    self.l("red.global.add.u32 [%rd6], %r5;");
                }
            }
            4 => {
                self.address(254);
                self.l("ld.global.v2.u32 {%r41, %r42}, [%rd6];");
            }
            5 => {
                self.l("and.b32 %r11, %r2, 63;");
                self.l("shl.b32 %r11, %r11, 2;");
                self.l("mov.u32 %r12, sh;");
                self.l("add.s32 %r11, %r12, %r11;");
                self.l("st.shared.u32 [%r11], %r5;");
                self.l(&format!("ld.shared.u32 %r{v}, [%r11];"));
            }
            6 => {
                self.l("st.local.u32 [loc+8], %r5;");
                self.l(&format!("ld.local.u32 %r{v}, [loc+8];"));
            }
            7 => {
                self.address(255);
                self.l("cvta.global.u64 %rd7, %rd6;");
                self.l(&format!("ld.u32 %r{v}, [%rd7];"));
            }
            8 => {
                // An early way out for some threads.
                let k = self.r.below(96);
                self.l(&format!("setp.eq.u32 %p{p}, %r2, {k};"));
                let how = ["ret", "exit", "trap"][self.r.below(3) as usize];
                self.l(&format!("@%p{p} {how};"));
            }
            9 => {
                self.l("{");
                self.l(".param .b64 pb;");
                self.l("st.param.b64 [pb], %rd1;");
                self.l(".param .b32 px;");
                self.l("st.param.b32 [px], %r5;");
                self.l(".param .b32 pr;");
                self.l("call (pr), helper, (pb, px);");
                self.l(&format!("ld.param.b32 %r{v}, [pr];"));
                self.l("}");
            }
            10 if depth == 0 => self.l("bar.sync 0;"),
            10 => self.l(&format!("add.u32 %r{v}, %r5, 7;")),
            11..=13 => {
                // Some threads skip a block.
                let t = self.r.below(96);
                let skip = self.label();
                self.l(&format!("setp.lt.u32 %p{p}, %r2, {t};"));
                self.l(&format!("@%p{p} bra {skip};"));
                for _ in 0..1 + self.r.below(3) {
                    self.statement(depth + 1);
                }
                self.s.push_str(&format!("{skip}:\n"));
            }
            _ => {
                // A loop of 1 to 4 + (tid & 3) trips.
                let c = 50 + depth;
                let top = self.label();
                let trips = 1 + self.r.below(3);
                self.l(&format!("mov.u32 %r{c}, 0;"));
                self.s.push_str(&format!("{top}:\n"));
                for _ in 0..1 + self.r.below(3) {
                    self.statement(depth + 1);
                }
                self.l(&format!("add.u32 %r{c}, %r{c}, 1;"));
                self.l(&format!("and.b32 %r{}, %r2, 3;", c + 4));
                self.l(&format!("add.u32 %r{}, %r{}, {trips};", c + 4, c + 4));
                self.l(&format!("setp.lt.u32 %p{p}, %r{c}, %r{};", c + 4));
                self.l(&format!("@%p{p} bra {top};"));
            }
        }
    }
}

/// The maps every random probe object has, in this order: `hist` (0), `other` (1),
/// `start` (2), `tstate` (3, per thread), `.bss` (4).
const MAPS: &str = ".map hist array 4 8 16\n.map other array 4 8 16\n.map start array 4 8 1024\n\
                    .map tstate perthread_array 4 8 2\n.map .bss array 4 16 1\n";

/// Program text, section.
type Probe = (String, String);

/// A random probe object: one to four probes of random kinds at random points, and the
/// kinds' names (for messages).
pub fn probes(seed: u64) -> (Object, Vec<String>) {
    let mut r = Rng::new(seed ^ 0x5eed_f00d);
    let n = 1 + r.below(4) as usize;
    let mut list: Vec<(Probe, String)> = Vec::new();
    for _ in 0..n {
        list.push(probe(&mut r));
    }
    // A forwarded load wants its store: often add one.
    if list.iter().any(|p| p.1.starts_with("Load")) && r.below(3) > 0 {
        list.push(store(
            &mut r,
            list.iter()
                .find(|p| p.1.starts_with("Load"))
                .map(|p| p.1.clone()),
        ));
    }
    let mut obj: Option<Object> = None;
    let mut names = Vec::new();
    for (k, ((text, section), kind)) in list.into_iter().enumerate() {
        let src = format!("{MAPS}{text}out:\nr0 = 0\nexit\n");
        let mut one = bpf2ptx_compiler::front::load_bytes("probe.s", src.as_bytes())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{src}"));
        let mut p = one.programs.remove(0);
        p.name = format!("p{k}");
        p.section = section.clone();
        names.push(format!("{kind} at {section}"));
        match &mut obj {
            None => {
                one.programs.push(p);
                obj = Some(one);
            }
            Some(o) => o.programs.push(p),
        }
    }
    (obj.expect("one probe at least"), names)
}

fn section(r: &mut Rng, point: &str) -> String {
    let g = ["", ".thread", ".warp", ".block"][r.below(4) as usize];
    format!("gpu/{point}{g}/*")
}

/// `r0` = the value pointer of `map`'s slot at the frame's key `r1`.
fn lookup(s: &mut String, map: u32) {
    let _ = writeln!(
        s,
        "*(u32 *)(r10 - 4) = r1\nr2 = r10\nr2 += -4\nr1 = map_idx({map}) ll\ncall 1"
    );
}

fn probe(r: &mut Rng) -> (Probe, String) {
    let point = ["entry", "exit", "mem", "mem"][r.below(4) as usize];
    let mem = point == "mem";
    let mut s = String::from("r6 = r1\n");
    // A key the site's context fixes: its site line (entry, exit) or the access's size and
    // flags (memory).
    let site_key = |s: &mut String| {
        if mem {
            s.push_str("r1 = *(u32 *)(r6 + 12)\nr2 = *(u32 *)(r6 + 8)\nr1 += r2\nr1 &= 15\n");
        } else {
            s.push_str("r1 = *(u32 *)(r6 + 4)\nr1 &= 15\n");
        }
    };
    let addend = |s: &mut String, r: &mut Rng| {
        if mem && r.below(2) == 0 {
            s.push_str("r7 = *(u32 *)(r6 + 8)\n");
        } else {
            let _ = writeln!(s, "r7 = {}", 1 + r.below(5));
        }
    };
    let kinds: &[&str] = if mem {
        &[
            "Count", "Plain", "Global", "AddrKey", "Reader", "Load", "Clobber", "Ender",
        ]
    } else if point == "exit" {
        &["Count", "Plain", "Global", "Reader", "Load", "Load"]
    } else {
        &["Count", "Plain", "Global", "Reader", "Store", "Store"]
    };
    let kind = kinds[r.below(kinds.len() as u64) as usize];
    match kind {
        "Store" => return store(r, None),
        "Count" | "Plain" => {
            addend(&mut s, r);
            site_key(&mut s);
            lookup(&mut s, 0);
            if kind == "Count" {
                s.push_str("if r0 == 0 goto out\nlock *(u64 *)(r0 + 0) += r7\n");
            } else {
                s.push_str(
                    "if r0 == 0 goto out\nr1 = *(u64 *)(r0 + 0)\nr1 += r7\n*(u64 *)(r0 + 0) = r1\n",
                );
            }
        }
        "Global" => {
            addend(&mut s, r);
            s.push_str("r1 = map_idx_value(4, 8) ll\nlock *(u64 *)(r1 + 0) += r7\n");
        }
        "AddrKey" => {
            s.push_str("r1 = *(u64 *)(r6 + 0)\nr1 >>= 2\nr1 &= 15\n");
            lookup(&mut s, 0);
            s.push_str("if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 + 0) += r1\n");
        }
        "Reader" => {
            // Reads a word nothing writes (the Load probes count in words 0-7), so what it
            // reads does not depend on the order threads run in.
            s.push_str("r1 = 15\n");
            lookup(&mut s, 1);
            s.push_str("if r0 == 0 goto out\nr7 = *(u64 *)(r0 + 0)\nr7 += 1\nr1 = 14\n");
            lookup(&mut s, 1);
            s.push_str("if r0 == 0 goto out\nlock *(u64 *)(r0 + 0) += r7\n");
        }
        "Load" => {
            let form = r.below(3);
            slot_key(&mut s, form);
            lookup(&mut s, if form == 2 { 3 } else { 2 });
            s.push_str("if r0 == 0 goto out\nr1 = *(u64 *)(r0 + 0)\nr1 &= 7\n");
            lookup(&mut s, 1);
            s.push_str("if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 + 0) += r1\n");
            return ((s, section(r, point)), format!("Load{form}"));
        }
        "Clobber" => {
            // The thread's own slot, per thread: what a later load reads is decided by the
            // thread's own order, and is not what the entry store left.
            slot_key(&mut s, 0);
            lookup(&mut s, 2);
            s.push_str("if r0 == 0 goto out\nr1 = 7\n*(u64 *)(r0 + 0) = r1\n");
            return ((s, "gpu/mem.thread/*".into()), kind.to_string());
        }
        _ => {
            // Ender: ends its thread at accesses to some addresses.
            s.push_str(
                "r1 = *(u64 *)(r6 + 0)\nr1 &= 0x70\nif r1 != 0x30 goto keep\ncall 507\nkeep:\n",
            );
            s.push_str("r1 = 9\n");
            lookup(&mut s, 0);
            s.push_str("if r0 == 0 goto out\nr1 = 1\nlock *(u64 *)(r0 + 0) += r1\n");
        }
    }
    ((s, section(r, point)), kind.to_string())
}

/// `r1` = the key of a forwarded slot: the global thread id (form 0), it shifted by 5
/// (form 1), or 0 of the per-thread `tstate` (form 2).
fn slot_key(s: &mut String, form: u64) {
    match form {
        0 => s.push_str("call 600\nr1 = r0\n"),
        1 => s.push_str("call 600\nr0 >>= 5\nr1 = r0\n"),
        _ => s.push_str("r1 = 0\n"),
    }
}

/// An entry probe storing a value of its thread to a forwarded slot: the form of `like`
/// (a `LoadN` kind) when given.
fn store(r: &mut Rng, like: Option<String>) -> (Probe, String) {
    let form = like
        .and_then(|k| k.strip_prefix("Load").and_then(|f| f.parse().ok()))
        .unwrap_or_else(|| r.below(3));
    let mut s = String::new();
    slot_key(&mut s, form);
    lookup(&mut s, if form == 2 { 3 } else { 2 });
    // The value: the thread's id times 3 plus its SM, or the timer.
    if r.below(2) == 0 {
        s.push_str(
            "if r0 == 0 goto out\nr6 = r0\ncall 600\nr0 *= 3\nr0 += 1\n*(u64 *)(r6 + 0) = r0\n",
        );
    } else {
        s.push_str("if r0 == 0 goto out\nr6 = r0\ncall 502\n*(u64 *)(r6 + 0) = r0\n");
    }
    // `gtid >> 5` is one slot per warp: stored by one lane (per warp or per block), as
    // a thread-order-independent outcome needs.
    let sec = match form {
        1 => ["gpu/entry.warp/*", "gpu/entry.block/*"][r.below(2) as usize].to_string(),
        _ => section(r, "entry"),
    };
    ((s, sec), format!("Store{form}"))
}
