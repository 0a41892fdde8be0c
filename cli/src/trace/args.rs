//! The `bpf2ptx trace` command line: [`TraceArgs`] and the value types of its options.

use super::TraceError;
use clap::{Args, ValueEnum};
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// `bpf2ptx trace PROBES.o [OPTIONS] -- COMMAND [ARGS...]`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct TraceArgs {
    /// The probe object (clang `-target bpf`): its GPU programs are injected into the
    /// kernels they match.
    pub probes: PathBuf,
    /// How often the maps are printed while the command runs (`500ms`, `2s`, `1.5s`,
    /// `250us`; a bare number is seconds); they are printed once more at its end.
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: Duration,
    /// How each snapshot is printed: tables and histograms, or one JSON object per
    /// line (specs/trace.md).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Also write the launches and ring records as Chrome trace-event JSON, which
    /// Perfetto and chrome://tracing open.
    #[arg(long, value_name = "FILE")]
    pub trace_events: Option<PathBuf>,
    /// Print map NAME as a histogram: `NAME=log2` (key i counts values in
    /// [2^i, 2^(i+1))) or `NAME=linear:MIN:MAX:STEP` (bpftrace's lhist buckets).
    /// Repeatable; overrides a `bpf2ptx:hist=...` BTF decl tag on the map.
    #[arg(long = "hist", value_name = "NAME=KIND", value_parser = HistSpec::parse)]
    pub hist: Vec<HistSpec>,
    /// Write the snapshots to FILE instead of standard output (the command's own output
    /// stays where it was).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Text: print at most N rows of each map (as sorted: arrays by key, hash maps
    /// largest value first), saying how many more there are; 0 prints every row.
    #[arg(long, value_name = "N", default_value_t = 40)]
    pub rows: usize,
    /// Leave Triton's kernels as Triton makes them: no Python start-up hook, and
    /// Triton's and TorchInductor's own caches (by default a traced Python process has
    /// Triton hand each kernel's PTX to the probes before assembling it, with caches of
    /// the session's own: specs/trace.md, "Triton").
    #[arg(long)]
    pub no_triton: bool,
    /// The command to trace, and its arguments.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<OsString>,
}

/// How snapshots are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Tables, histograms, failure counters and records, for a terminal.
    Text,
    /// One JSON object per snapshot, one per line (schema: specs/trace-snapshot.schema.json).
    Json,
}

/// How a map's keys are read as histogram buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hist {
    /// Key `i` counts values in `[2^i, 2^(i+1))`.
    Log2,
    /// bpftrace's `lhist(v, min, max, step)` buckets: key 0 counts values below `min`,
    /// key `k` in `1..=n` values in `[min + (k-1)·step, min + k·step)`, key `n + 1`
    /// values of `max` or more, where `n = (max - min) / step`.
    Linear {
        /// Lower bound.
        min: i64,
        /// Upper bound (`min` plus a whole number of steps).
        max: i64,
        /// Bucket width, at least 1.
        step: i64,
    },
}

impl Hist {
    /// Parses the part after `NAME=` of `--hist`, or the value of a `bpf2ptx:hist=` tag:
    /// `log2` or `linear:MIN:MAX:STEP`.
    pub fn parse(text: &str) -> Result<Hist, TraceError> {
        let bad = |why: &str| TraceError::Hist {
            text: text.to_string(),
            why: why.to_string(),
        };
        if text == "log2" {
            return Ok(Hist::Log2);
        }
        let Some(rest) = text.strip_prefix("linear:") else {
            return Err(bad("expected `log2` or `linear:MIN:MAX:STEP`"));
        };
        let parts: Vec<&str> = rest.split(':').collect();
        let [min, max, step] = parts[..] else {
            return Err(bad("expected `linear:MIN:MAX:STEP`"));
        };
        let num = |s: &str| s.trim().parse::<i64>().map_err(|_| bad("not an integer"));
        let (min, max, step) = (num(min)?, num(max)?, num(step)?);
        if step < 1 {
            return Err(bad("STEP must be at least 1"));
        }
        if max <= min || (max - min) % step != 0 {
            return Err(bad("MAX must be MIN plus a whole number of STEPs"));
        }
        Ok(Hist::Linear { min, max, step })
    }
}

/// One `--hist NAME=KIND`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistSpec {
    /// The map.
    pub map: String,
    /// Its buckets.
    pub hist: Hist,
}

impl HistSpec {
    /// Parses `NAME=log2` or `NAME=linear:MIN:MAX:STEP`.
    pub fn parse(text: &str) -> Result<HistSpec, TraceError> {
        match text.split_once('=') {
            Some((map, kind)) if !map.is_empty() => Ok(HistSpec {
                map: map.to_string(),
                hist: Hist::parse(kind)?,
            }),
            _ => Err(TraceError::Hist {
                text: text.to_string(),
                why: "expected NAME=log2 or NAME=linear:MIN:MAX:STEP".to_string(),
            }),
        }
    }
}

/// Parses `--interval`: a decimal number with a unit `s`, `ms` or `us` (a bare number is
/// seconds), more than zero: a zero interval would print without pause.
pub fn parse_interval(text: &str) -> Result<Duration, TraceError> {
    let bad = |why: &str| TraceError::Interval {
        text: text.to_string(),
        why: why.to_string(),
    };
    let t = text.trim();
    let (num, scale) = [("ms", 1e-3), ("us", 1e-6), ("s", 1.0)]
        .iter()
        .find_map(|(unit, scale)| t.strip_suffix(unit).map(|n| (n, *scale)))
        .unwrap_or((t, 1.0));
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| bad("expected a number with a unit: 500ms, 2s, 250us"))?;
    let secs = v * scale;
    if !secs.is_finite() || secs <= 0.0 {
        return Err(bad("must be more than zero"));
    }
    Duration::try_from_secs_f64(secs).map_err(|_| bad("too large"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        trace: TraceArgs,
    }

    fn parse(args: &[&str]) -> Result<TraceArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("trace").chain(args.iter().copied())).map(|c| c.trace)
    }

    #[test]
    fn defaults_and_the_command_after_the_separator() {
        let a = parse(&["p.o", "--", "./app", "--interval", "x"]).unwrap();
        assert_eq!(a.probes, PathBuf::from("p.o"));
        assert_eq!(a.interval, Duration::from_secs(1));
        assert_eq!(a.format, Format::Text);
        assert_eq!(a.trace_events, None);
        assert!(a.hist.is_empty());
        // What follows `--` is the app's, options included.
        assert_eq!(a.command, ["./app", "--interval", "x"].map(OsString::from));
    }

    #[test]
    fn every_option() {
        let a = parse(&[
            "p.o",
            "--interval",
            "250ms",
            "--format",
            "json",
            "--trace-events",
            "out.json",
            "--hist",
            "lat=log2",
            "--hist",
            "sizes=linear:0:100:10",
            "--",
            "python3",
            "train.py",
        ])
        .unwrap();
        assert_eq!(a.interval, Duration::from_millis(250));
        assert_eq!(a.format, Format::Json);
        assert_eq!(a.trace_events, Some(PathBuf::from("out.json")));
        assert_eq!(
            a.hist,
            [
                HistSpec {
                    map: "lat".into(),
                    hist: Hist::Log2
                },
                HistSpec {
                    map: "sizes".into(),
                    hist: Hist::Linear {
                        min: 0,
                        max: 100,
                        step: 10
                    }
                },
            ]
        );
    }

    #[test]
    fn refusals() {
        for bad in [
            &["p.o"][..],                                  // no command
            &["p.o", "--"][..],                            // empty command
            &["p.o", "--format", "yaml", "--", "a"][..],   // unknown format
            &["p.o", "--interval", "0", "--", "a"][..],    // zero interval
            &["p.o", "--interval", "fast", "--", "a"][..], // not a number
            &["p.o", "--hist", "lat", "--", "a"][..],      // no kind
            &["p.o", "--hist", "=log2", "--", "a"][..],    // no name
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn intervals() {
        for (text, want) in [
            ("1s", Duration::from_secs(1)),
            ("2", Duration::from_secs(2)),
            ("1.5s", Duration::from_millis(1500)),
            ("500ms", Duration::from_millis(500)),
            ("250us", Duration::from_micros(250)),
        ] {
            assert_eq!(parse_interval(text).unwrap(), want, "{text}");
        }
        for text in ["0s", "-1s", "", "1h", "nan", "inf"] {
            assert!(parse_interval(text).is_err(), "{text}");
        }
    }

    #[test]
    fn histogram_kinds() {
        assert_eq!(Hist::parse("log2").unwrap(), Hist::Log2);
        assert_eq!(
            Hist::parse("linear:-10:10:5").unwrap(),
            Hist::Linear {
                min: -10,
                max: 10,
                step: 5
            }
        );
        for bad in [
            "log10",
            "linear:0:10",
            "linear:0:10:0",
            "linear:10:0:1",
            "linear:0:10:3",
            "linear:a:b:c",
        ] {
            let e = Hist::parse(bad).unwrap_err();
            assert!(matches!(e, TraceError::Hist { .. }), "{bad}: {e}");
        }
    }
}
