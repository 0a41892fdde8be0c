//! Histogram buckets and their text, as bpftrace's `hist()` and `lhist()` print them:
//! a label padded to 16 columns, the count right-aligned in 8, and a bar of `@` up to 52
//! wide scaled to the largest bucket, between `|`s. Buckets before the first and after
//! the last non-zero one are left out, zero buckets between them are printed, so the
//! shape of the distribution is never hidden.

use super::args::Hist;

/// Bar width of the largest bucket (bpftrace's).
const BAR: usize = 52;

/// One bucket of a histogram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Bucket {
    /// bpftrace's label: `[1]`, `[2, 4)`, `[1K, 2K)`, `(..., 0)`, `[100, ...)`.
    pub label: String,
    /// Smallest value counted; `None` for an underflow bucket.
    pub min: Option<i128>,
    /// First value past the bucket; `None` for an overflow bucket.
    pub max: Option<i128>,
    /// Values counted.
    pub count: u64,
}

/// The buckets of `hist` from `(key, count)` pairs: trimmed to the first and last
/// non-zero bucket. A linear histogram's keys past its overflow bucket are counted in
/// it, so no count is lost.
pub(super) fn buckets(hist: Hist, counts: &[(u64, u64)]) -> Vec<Bucket> {
    let last_key = match hist {
        Hist::Log2 => counts.iter().map(|c| c.0).max().unwrap_or(0),
        Hist::Linear { min, max, step } => ((max - min) / step) as u64 + 1,
    };
    let mut dense = vec![0u64; last_key as usize + 1];
    for &(k, n) in counts {
        let k = k.min(last_key) as usize;
        dense[k] = dense[k].wrapping_add(n);
    }
    let Some(first) = dense.iter().position(|&n| n > 0) else {
        return Vec::new();
    };
    let last = dense.iter().rposition(|&n| n > 0).unwrap_or(first);
    (first..=last)
        .map(|k| {
            let (label, min, max) = bounds(hist, k as u64);
            Bucket {
                label,
                min,
                max,
                count: dense[k],
            }
        })
        .collect()
}

/// Key `k`'s label and bounds.
fn bounds(hist: Hist, k: u64) -> (String, Option<i128>, Option<i128>) {
    match hist {
        Hist::Log2 => {
            let (lo, hi) = (1i128 << k.min(126), 1i128 << (k + 1).min(126));
            let label = if k == 0 {
                "[1]".to_string()
            } else {
                format!("[{}, {})", power_label(k), power_label(k + 1))
            };
            (label, Some(lo), Some(hi))
        }
        Hist::Linear { min, max, step } => {
            let n = ((max - min) / step) as u64;
            let lab = |v: i64| linear_label(v, step);
            if k == 0 {
                (format!("(..., {})", lab(min)), None, Some(min.into()))
            } else if k > n {
                (format!("[{}, ...)", lab(max)), Some(max.into()), None)
            } else {
                let lo = min + (k as i64 - 1) * step;
                (
                    format!("[{}, {})", lab(lo), lab(lo + step)),
                    Some(lo.into()),
                    Some((lo + step).into()),
                )
            }
        }
    }
}

/// `2^p` as bpftrace writes it: the power of two below 1024 and a K, M, G, T, P or E
/// suffix for each factor of 1024 (`1K`, `512M`); `2^p` past the suffixes.
fn power_label(p: u64) -> String {
    const SUFFIX: [&str; 7] = ["", "K", "M", "G", "T", "P", "E"];
    match SUFFIX.get((p / 10) as usize) {
        Some(s) => format!("{}{s}", 1u64 << (p % 10)),
        None => format!("2^{p}"),
    }
}

/// A linear bound as bpftrace writes it: with a K or M suffix only when the step is a
/// multiple of 1024 and the bound of 1024 or 1024².
fn linear_label(v: i64, step: i64) -> String {
    const K: i64 = 1024;
    if step % K != 0 || v == 0 {
        v.to_string()
    } else if v % (K * K) == 0 {
        format!("{}M", v / (K * K))
    } else if v % K == 0 {
        format!("{}K", v / K)
    } else {
        v.to_string()
    }
}

/// The histogram's lines, each ending in a newline.
pub(super) fn text(buckets: &[Bucket]) -> String {
    let top = buckets.iter().map(|b| b.count).max().unwrap_or(0);
    let mut out = String::new();
    for b in buckets {
        // bpftrace scales in single precision and truncates; so does this.
        let width = if top == 0 {
            0
        } else {
            (b.count as f32 / top as f32 * BAR as f32) as usize
        };
        let bar = "@".repeat(width);
        out.push_str(&format!("{:<16}{:>8} |{bar:<BAR$}|\n", b.label, b.count));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_labels_follow_bpftrace() {
        let labels: Vec<String> = [0, 1, 2, 9, 10, 19, 20, 30, 63, 70]
            .map(|k| bounds(Hist::Log2, k).0)
            .to_vec();
        assert_eq!(
            labels,
            [
                "[1]",
                "[2, 4)",
                "[4, 8)",
                "[512, 1K)",
                "[1K, 2K)",
                "[512K, 1M)",
                "[1M, 2M)",
                "[1G, 2G)",
                "[8E, 16E)",
                "[2^70, 2^71)"
            ]
        );
    }

    #[test]
    fn linear_labels_and_edges() {
        let h = Hist::Linear {
            min: 0,
            max: 4096,
            step: 1024,
        };
        let labels: Vec<String> = [0, 1, 2, 4, 5, 9].map(|k| bounds(h, k).0).to_vec();
        assert_eq!(
            labels,
            [
                "(..., 0)",
                "[0, 1K)",
                "[1K, 2K)",
                "[3K, 4K)",
                "[4K, ...)",
                "[4K, ...)"
            ]
        );
        let h = Hist::Linear {
            min: -10,
            max: 10,
            step: 10,
        };
        assert_eq!(bounds(h, 1), ("[-10, 0)".into(), Some(-10), Some(0)));
        // Keys past the overflow bucket count in it.
        let b = buckets(h, &[(2, 1), (3, 2), (9, 4)]);
        assert_eq!(
            b.iter()
                .map(|b| (b.label.as_str(), b.count))
                .collect::<Vec<_>>(),
            [("[0, 10)", 1), ("[10, ...)", 6)]
        );
    }

    #[test]
    fn trimmed_outside_kept_inside_and_bars_scaled() {
        let b = buckets(Hist::Log2, &[(0, 0), (1, 4), (2, 0), (3, 2), (5, 0)]);
        assert_eq!(
            text(&b),
            format!(
                "[2, 4)                 4 |{}|\n[4, 8)                 0 |{}|\n[8, 16)                2 |{}{}|\n",
                "@".repeat(52),
                " ".repeat(52),
                "@".repeat(26),
                " ".repeat(26)
            )
        );
        assert!(buckets(Hist::Log2, &[(3, 0)]).is_empty());
    }
}
