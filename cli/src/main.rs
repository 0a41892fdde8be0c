//! The `bpf2ptx` binary.

use bpf2ptx::{dump::Dump, exit};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::path::PathBuf;

/// Compile eBPF programs to NVIDIA PTX probes.
#[derive(Parser)]
#[command(name = "bpf2ptx", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print what an input holds: sections, maps, programs, disassembly with relocations
    /// and source lines. FILE is a BPF ELF object, a bpf_conformance .data file or a text
    /// assembly file (detected from the content).
    Dump {
        /// The input file.
        file: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Text,
    Json,
}

fn main() {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let code = if e.use_stderr() {
                exit::BAD_INPUT
            } else {
                exit::OK
            };
            let _ = e.print();
            std::process::exit(code);
        }
    };
    let code = match cli.command {
        Command::Dump { file, format } => match bpf2ptx::load_path(&file) {
            Ok(obj) => {
                let d = Dump::new(&obj);
                let text = match format {
                    Format::Text => d.to_text(),
                    Format::Json => d.to_json(),
                };
                // A closed pipe (`bpf2ptx dump x | head`) is not an error worth a panic.
                let _ = std::io::stdout().write_all(text.as_bytes());
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::BAD_INPUT
            }
        },
    };
    std::process::exit(code);
}
