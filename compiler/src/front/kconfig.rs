//! Values of kconfig externs (`extern T CONFIG_X __kconfig`): a Linux config file
//! (`CONFIG_X=y`, `=n`, `=m`, a number, or a quoted string; `# CONFIG_X is not set`
//! and other comments ignored) and libbpf's defaults, written into the object's
//! `.kconfig` map the way libbpf's `bpf_object__resolve_externs` writes them.
//!
//! Which extern takes what (libbpf's `set_kcfg_value_tri`, `_str`, `_num`):
//!
//! | type | `y` / `n` / `m` | number | `"string"` |
//! |---|---|---|---|
//! | `bool` | 1 / 0 / error | 0 or 1 | error |
//! | `enum libbpf_tristate` | 1 / 0 / 2 | error | error |
//! | `char` | the character | if it fits | error |
//! | integer | error | if it fits (signed or not) | error |
//! | `char[N]` | error | error | cut to N - 1 bytes and a NUL |
//!
//! Names outside the file: `LINUX_KERNEL_VERSION` is the kernel version the caller
//! passes (libbpf: the running kernel's; a `LINUX_KERNEL_VERSION=N` line overrides it),
//! `LINUX_HAS_BPF_COOKIE` and `LINUX_HAS_SYSCALL_WRAPPER` are 0 (false: the GPU has no
//! BPF cookie and no system calls to wrap); any other extern without a value is 0 when
//! it is `__weak` and [`KconfigError::Missing`] otherwise.

use crate::program::{ExternKind, KconfigType, Object};
use std::collections::HashMap;
use thiserror::Error;

/// Why kconfig values cannot be given to an object.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum KconfigError {
    /// A line of the config file is malformed.
    #[error("{config}:{line}: {what}: `{text}`")]
    Syntax {
        /// The config file.
        config: String,
        /// 1-based line.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong.
        what: &'static str,
    },
    /// The config file sets one name twice.
    #[error("{config}:{line}: `{name}` is set twice (first on line {first})")]
    Duplicate {
        /// The config file.
        config: String,
        /// 1-based line of the second.
        line: usize,
        /// The first.
        first: usize,
        /// The name.
        name: String,
    },
    /// A value does not fit the extern's type.
    #[error("{file}: kconfig extern `{name}` ({ty}): {given} {why}")]
    Value {
        /// The object file.
        file: String,
        /// The extern.
        name: String,
        /// Its type, as C spells it.
        ty: String,
        /// Where the value comes from and the value as written (`CONFIG:LINE value
        /// `y``, or `default value `0``).
        given: String,
        /// Why it does not fit.
        why: String,
    },
    /// A non-weak extern has no value.
    #[error(
        "{file}: kconfig extern `{name}` ({ty}) has no value: give it in a Linux config \
         file with --kconfig FILE (`{name}=...`), or declare it __weak to default to 0"
    )]
    Missing {
        /// The object file.
        file: String,
        /// The extern.
        name: String,
        /// Its type, as C spells it.
        ty: String,
    },
}

/// One value of a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KconfigValue {
    /// `y`, `n` or `m`.
    Tristate(char),
    /// A number (`strtoull` base 0: decimal, `0x` hex, leading-0 octal; `-N` allowed).
    Number(u64),
    /// A quoted string, without the quotes.
    String(String),
}

/// A parsed config file: name → (value, 1-based line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Kconfig {
    /// The file's name, for messages.
    pub name: String,
    /// The values.
    pub values: HashMap<String, (KconfigValue, usize)>,
}

/// Parses a Linux config file: `CONFIG_X=VALUE` and `LINUX_X=VALUE` lines; blank lines,
/// comments and other lines that do not start with `CONFIG_` or `LINUX_` are ignored,
/// as libbpf ignores them.
pub fn parse(name: &str, text: &str) -> Result<Kconfig, KconfigError> {
    let mut out = Kconfig {
        name: name.to_string(),
        values: HashMap::new(),
    };
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if !(line.starts_with("CONFIG_") || line.starts_with("LINUX_")) {
            continue;
        }
        let bad = |what| KconfigError::Syntax {
            config: name.to_string(),
            line: n + 1,
            text: line.chars().take(120).collect(),
            what,
        };
        let (key, value) = line.split_once('=').ok_or_else(|| bad("no `=`"))?;
        let (key, value) = (key.trim(), value.trim());
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(bad("the name is not a config symbol"));
        }
        let v = match value {
            "y" | "n" | "m" => KconfigValue::Tristate(value.chars().next().unwrap_or('n')),
            v if v.starts_with('"') => {
                let inner = v
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .filter(|_| v.len() >= 2)
                    .ok_or_else(|| bad("unterminated string"))?;
                KconfigValue::String(inner.to_string())
            }
            v => KconfigValue::Number(
                number(v).ok_or_else(|| bad("not y, n, m, a number or a quoted string"))?,
            ),
        };
        if let Some((_, first)) = out.values.get(key) {
            return Err(KconfigError::Duplicate {
                config: name.to_string(),
                line: n + 1,
                first: *first,
                name: key.to_string(),
            });
        }
        out.values.insert(key.to_string(), (v, n + 1));
    }
    Ok(out)
}

/// `strtoull(s, &end, 0)` that must read the whole text: decimal, `0x` hex, octal with a
/// leading 0, an optional sign (a negative number wraps, as strtoull's does).
fn number(s: &str) -> Option<u64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let v = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()?
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()?
    } else {
        s.parse().ok()?
    };
    Some(if neg { v.wrapping_neg() } else { v })
}

/// libbpf's `KERNEL_VERSION(a, b, c)` of a release string (`6.1.0-18-amd64`: the first
/// three numbers, the third capped at 255); `None` if it does not start `A.B`.
pub fn kernel_version(release: &str) -> Option<u32> {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .take(3)
        .map(|p| p.parse::<u32>().ok());
    let a = parts.next()??;
    let b = parts.next()??;
    let c = parts.next().flatten().unwrap_or(0);
    Some((a.min(255) << 16) | (b.min(255) << 8) | c.min(255))
}

/// Writes every kconfig extern's value into the `.kconfig` map of `obj` (its `init`):
/// from `config` where it sets the name, else the defaults in the module text. An object
/// without kconfig externs is left as it is.
pub fn apply(
    obj: &mut Object,
    config: Option<&Kconfig>,
    kernel_version: Option<u32>,
) -> Result<(), KconfigError> {
    let mut data: Option<(usize, Vec<u8>)> = None;
    for e in &obj.externs {
        let ExternKind::Kconfig {
            ty,
            offset,
            size,
            map,
        } = e.kind
        else {
            continue;
        };
        let Some(m) = obj.maps.get(map) else { continue };
        let (_, buf) = data.get_or_insert_with(|| (map, vec![0; m.value_size as usize]));
        let tyname = ty.describe(size);
        let from_file = config.and_then(|c| {
            c.values
                .get(&e.name)
                .map(|(v, line)| (v.clone(), format!("{}:{line}", c.name)))
        });
        let (value, origin) = match from_file {
            Some(v) => v,
            None => match e.name.as_str() {
                "LINUX_KERNEL_VERSION" => match kernel_version {
                    Some(v) => (KconfigValue::Number(u64::from(v)), "default".to_string()),
                    None => {
                        return Err(KconfigError::Missing {
                            file: obj.file.clone(),
                            name: e.name.clone(),
                            ty: tyname,
                        })
                    }
                },
                "LINUX_HAS_BPF_COOKIE" | "LINUX_HAS_SYSCALL_WRAPPER" => {
                    (KconfigValue::Number(0), "default".to_string())
                }
                _ if e.weak => continue,
                _ => {
                    return Err(KconfigError::Missing {
                        file: obj.file.clone(),
                        name: e.name.clone(),
                        ty: tyname,
                    })
                }
            },
        };
        let fail = |why: String| KconfigError::Value {
            file: obj.file.clone(),
            name: e.name.clone(),
            ty: tyname.clone(),
            given: format!(
                "{origin} value `{}`",
                match &value {
                    KconfigValue::Tristate(c) => c.to_string(),
                    KconfigValue::Number(n) => n.to_string(),
                    KconfigValue::String(s) => format!("\"{s}\""),
                }
            ),
            why,
        };
        let bytes = encode(ty, size, &value).map_err(fail)?;
        let (at, end) = (offset as usize, offset as usize + bytes.len());
        if let Some(slot) = buf.get_mut(at..end) {
            slot.copy_from_slice(&bytes);
        }
    }
    if let Some((map, bytes)) = data {
        obj.maps[map].init = Some(bytes);
    }
    Ok(())
}

/// The bytes of one value for an extern of type `ty` and `size` bytes.
fn encode(ty: KconfigType, size: u32, value: &KconfigValue) -> Result<Vec<u8>, String> {
    let int = |v: u64, signed: bool| -> Result<Vec<u8>, String> {
        let bits = size * 8;
        let fits = bits >= 64
            || if signed {
                v.wrapping_add(1 << (bits - 1)) < (1 << bits)
            } else {
                v >> bits == 0
            };
        if !fits {
            return Err(format!(
                "does not fit in {size} byte{}",
                if size == 1 { "" } else { "s" }
            ));
        }
        Ok(v.to_le_bytes()[..size as usize].to_vec())
    };
    match (ty, value) {
        (KconfigType::Bool, KconfigValue::Tristate('m')) => {
            Err("is a module (m), which a bool cannot hold".into())
        }
        (KconfigType::Bool, KconfigValue::Tristate(c)) => Ok(vec![u8::from(*c == 'y')]),
        (KconfigType::Bool, KconfigValue::Number(n)) if *n <= 1 => Ok(vec![*n as u8]),
        (KconfigType::Bool, KconfigValue::Number(_)) => Err("is not 0 or 1".into()),
        (KconfigType::Tristate, KconfigValue::Tristate(c)) => {
            let v: u32 = match c {
                'y' => 1,
                'm' => 2,
                _ => 0,
            };
            Ok(v.to_le_bytes().to_vec())
        }
        (KconfigType::Char, KconfigValue::Tristate(c)) => Ok(vec![*c as u8]),
        (KconfigType::Char, KconfigValue::Number(n)) => int(*n, false),
        (KconfigType::Int { signed }, KconfigValue::Number(n)) => int(*n, signed),
        (KconfigType::CharArray, KconfigValue::String(s)) => {
            let mut b = vec![0u8; size as usize];
            let n = s.len().min(size as usize - 1);
            b[..n].copy_from_slice(&s.as_bytes()[..n]);
            Ok(b)
        }
        (_, KconfigValue::Tristate(_)) => {
            Err("implies bool, tristate or char, which this extern is not".into())
        }
        (_, KconfigValue::Number(_)) => {
            Err("implies an integer, char or bool, which this extern is not".into())
        }
        (_, KconfigValue::String(_)) => Err("is a string, which only a char array takes".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_linux_config_lines() {
        let k = parse(
            "c",
            "# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=0x10\nCONFIG_D=\"x y\"\nCONFIG_E=-1\nLINUX_KERNEL_VERSION=393216\n",
        )
        .unwrap();
        assert_eq!(k.values["CONFIG_A"].0, KconfigValue::Tristate('y'));
        assert!(!k.values.contains_key("CONFIG_B"));
        assert_eq!(k.values["CONFIG_C"].0, KconfigValue::Number(16));
        assert_eq!(k.values["CONFIG_D"].0, KconfigValue::String("x y".into()));
        assert_eq!(k.values["CONFIG_E"].0, KconfigValue::Number(u64::MAX));
        assert_eq!(k.values["LINUX_KERNEL_VERSION"].1, 7);
        assert!(matches!(
            parse("c", "CONFIG_A\n"),
            Err(KconfigError::Syntax { line: 1, .. })
        ));
        assert!(matches!(
            parse("c", "CONFIG_A=\"x\n"),
            Err(KconfigError::Syntax { .. })
        ));
        assert!(matches!(
            parse("c", "CONFIG_A=1\nCONFIG_A=2\n"),
            Err(KconfigError::Duplicate {
                first: 1,
                line: 2,
                ..
            })
        ));
        assert!(matches!(
            parse("c", "CONFIG_A=12abc\n"),
            Err(KconfigError::Syntax { .. })
        ));
    }

    #[test]
    fn kernel_versions_as_libbpf_computes_them() {
        assert_eq!(kernel_version("6.1.0-18-amd64"), Some(0x060100));
        assert_eq!(kernel_version("5.15.300"), Some(0x050fff));
        assert_eq!(kernel_version("6.8"), Some(0x060800));
        assert_eq!(kernel_version("x"), None);
    }

    #[test]
    fn values_fit_types_as_in_libbpf() {
        let int = KconfigType::Int { signed: true };
        assert_eq!(
            encode(int, 4, &KconfigValue::Number(u64::MAX)).unwrap(),
            [0xff; 4]
        );
        assert!(encode(int, 1, &KconfigValue::Number(200)).is_err());
        assert!(encode(
            KconfigType::Int { signed: false },
            1,
            &KconfigValue::Number(200)
        )
        .is_ok());
        assert!(encode(KconfigType::Bool, 1, &KconfigValue::Tristate('m')).is_err());
        assert_eq!(
            encode(KconfigType::Tristate, 4, &KconfigValue::Tristate('m')).unwrap(),
            [2, 0, 0, 0]
        );
        assert_eq!(
            encode(
                KconfigType::CharArray,
                4,
                &KconfigValue::String("hello".into())
            )
            .unwrap(),
            *b"hel\0"
        );
        assert!(encode(KconfigType::CharArray, 4, &KconfigValue::Number(1)).is_err());
        assert!(encode(int, 4, &KconfigValue::String("1".into())).is_err());
    }
}
