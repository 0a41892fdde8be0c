//! Writes random bpf_conformance `.data` files whose `-- result` is what the reference
//! interpreter computes, for a differential run on the GPU:
//!
//! ```sh
//! cargo run -p bpf2ptx-tests --example gen_random -- DIR COUNT [SEED] [LEN]
//! bpf2ptx run DIR          # on the GPU machine: every file must pass
//! ```

use bpf2ptx_tests::random;
use std::fmt::Write as _;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: gen_random DIR COUNT [SEED] [LEN]");
        std::process::exit(2);
    }
    let dir = std::path::Path::new(&args[1]);
    let count: u64 = args[2].parse().expect("COUNT");
    let seed: u64 = args.get(3).map_or(1, |s| s.parse().expect("SEED"));
    let len: usize = args.get(4).map_or(60, |s| s.parse().expect("LEN"));
    std::fs::create_dir_all(dir).expect("create DIR");
    for k in 0..count {
        let (text, mem) = random::program(seed + k, len);
        let obj = bpf2ptx::load_bytes("random.s", text.as_bytes())
            .unwrap_or_else(|e| panic!("seed {}: {e}\n{text}", seed + k));
        let mut m = mem.clone();
        let r0 = bpf2ptx_compiler::interp::run(&obj, 0, &mut m, &Default::default())
            .unwrap_or_else(|e| panic!("seed {}: {e}", seed + k));
        let mut data = format!(
            "# random program, seed {}\n-- asm\n{text}-- mem\n",
            seed + k
        );
        for (i, b) in mem.iter().enumerate() {
            let _ = write!(data, "{b:02x}{}", if i % 16 == 15 { "\n" } else { " " });
        }
        let _ = writeln!(data, "-- result\n0x{r0:x}");
        std::fs::write(dir.join(format!("random-{:06}.data", seed + k)), data).expect("write");
    }
}
