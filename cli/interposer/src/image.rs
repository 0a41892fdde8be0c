//! The bytes of a module image the application hands the driver.
//!
//! `cuModuleLoadData`, `cuLibraryLoadData` and their kin take a bare pointer: the driver
//! learns the image's size from the image itself. The interposer must do the same to keep
//! a copy, which it reads lazily, when a kernel the probes match is first launched (the
//! application may free its buffer after the load). The four forms the driver accepts:
//!
//! | starts with | form | size |
//! |---|---|---|
//! | `0x466243b1` (u32) | fatbin wrapper (`__fatBinC_Wrapper_t`: magic, version, pointer to the fatbin, ...) | that of the fatbin it points to |
//! | `0xba55ed50` (u32) | fatbin | header bytes (u16 at 6) + payload bytes (u64 at 8) |
//! | `\x7fELF` | cubin (ELF64) | the end of its section and program header tables |
//! | anything else | PTX text | up to the terminating NUL |
//!
//! [`size_of_prefix`] decides from a prefix; [`copy_image`] applies it to a pointer.

/// First word of a fatbin wrapper (`__fatBinC_Wrapper_t`), which cudart registers.
pub const WRAPPER_MAGIC: u32 = 0x4662_43b1;
/// First word of a fatbin.
pub const FATBIN_MAGIC: u32 = 0xba55_ed50;
/// The largest image the interposer copies (a larger "size" means a corrupt header).
pub const MAX_IMAGE: u64 = 1 << 31;

/// What a prefix of an image says about its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// The image has exactly this many bytes.
    Bytes(u64),
    /// A fatbin wrapper: the image is the fatbin at this address.
    Wrapper(u64),
    /// PTX text: the image ends at its first NUL.
    Text,
    /// The header is malformed (an impossible size).
    Bad,
}

/// The size of the image that starts with `head` (at least 64 bytes of it, or the whole
/// image when shorter).
pub fn size_of_prefix(head: &[u8]) -> Size {
    let u16_at = |o: usize| head.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        head.get(o..o + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
    };
    let u64_at = |o: usize| {
        head.get(o..o + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    };
    let checked = |n: Option<u64>| match n {
        Some(n) if n > 0 && n <= MAX_IMAGE => Size::Bytes(n),
        _ => Size::Bad,
    };
    match u32_at(0) {
        Some(WRAPPER_MAGIC) => u64_at(8).map_or(Size::Bad, Size::Wrapper),
        Some(FATBIN_MAGIC) => checked(
            u16_at(6)
                .zip(u64_at(8))
                .and_then(|(h, p)| u64::from(h).checked_add(p)),
        ),
        _ if head.starts_with(b"\x7fELF") => {
            // ELF64 little-endian: e_phoff at 32, e_shoff at 40, e_phentsize 54,
            // e_phnum 56, e_shentsize 58, e_shnum 60.
            if head.get(4) != Some(&2) || head.get(5) != Some(&1) {
                return Size::Bad;
            }
            let table = |off: usize, ent: usize, num: usize| {
                let (o, e, n) = (u64_at(off)?, u16_at(ent)?, u16_at(num)?);
                o.checked_add(u64::from(e) * u64::from(n))
            };
            let end = table(32, 54, 56)
                .zip(table(40, 58, 60))
                .map(|(p, s)| p.max(s).max(64));
            checked(end)
        }
        _ => Size::Text,
    }
}

/// Copies the image at `ptr` (what the application passed the driver).
///
/// # Safety
/// `ptr` must point to an image the driver accepts: the same contract as the driver's
/// own reading of it (a readable, complete fatbin, wrapper, cubin or NUL-terminated PTX).
pub unsafe fn copy_image(ptr: *const u8) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    // Read no byte the form does not have: the first word (PTX text may be shorter: stop
    // at a NUL), then the header its magic says (a wrapper and a fatbin header are 16
    // bytes that matter, an ELF64 header 64).
    let mut head = Vec::with_capacity(64);
    while head.len() < 4 {
        let b = *ptr.add(head.len());
        if b == 0 {
            return Some(head);
        }
        head.push(b);
    }
    let want = match u32::from_le_bytes(head[..4].try_into().unwrap()) {
        WRAPPER_MAGIC | FATBIN_MAGIC => 16,
        _ if head == b"\x7fELF" => 64,
        _ => 0,
    };
    head.extend_from_slice(std::slice::from_raw_parts(ptr.add(4), want.max(4) - 4));
    match size_of_prefix(&head) {
        Size::Bytes(n) => Some(std::slice::from_raw_parts(ptr, n as usize).to_vec()),
        Size::Wrapper(fatbin) if fatbin != 0 && fatbin as *const u8 != ptr => {
            copy_image(fatbin as *const u8)
        }
        Size::Text => Some(std::ffi::CStr::from_ptr(ptr.cast()).to_bytes().to_vec()),
        Size::Wrapper(_) | Size::Bad => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fatbin(header: u16, payload: u64) -> Vec<u8> {
        let mut v = FATBIN_MAGIC.to_le_bytes().to_vec();
        v.extend(1u16.to_le_bytes());
        v.extend(header.to_le_bytes());
        v.extend(payload.to_le_bytes());
        v.resize(header as usize + payload as usize, 0xab);
        v
    }

    #[test]
    fn fatbin_size_is_header_plus_payload() {
        let f = fatbin(16, 100);
        assert_eq!(size_of_prefix(&f[..64]), Size::Bytes(116));
        assert_eq!(unsafe { copy_image(f.as_ptr()) }, Some(f.clone()));
    }

    #[test]
    fn wrapper_points_to_its_fatbin() {
        let f = fatbin(16, 40);
        let mut w = WRAPPER_MAGIC.to_le_bytes().to_vec();
        w.extend(1u32.to_le_bytes());
        w.extend((f.as_ptr() as u64).to_le_bytes());
        w.extend(0u64.to_le_bytes());
        assert_eq!(size_of_prefix(&w), Size::Wrapper(f.as_ptr() as u64));
        assert_eq!(unsafe { copy_image(w.as_ptr()) }, Some(f));
    }

    #[test]
    fn ptx_ends_at_nul() {
        let t = b".version 8.0\n.target sm_90\n\0garbage";
        assert_eq!(
            unsafe { copy_image(t.as_ptr()) }.as_deref(),
            Some(&t[..t.len() - 8])
        );
        let short = b"x\0";
        assert_eq!(unsafe { copy_image(short.as_ptr()) }, Some(b"x".to_vec()));
    }

    #[test]
    fn elf_size_from_header_tables() {
        let mut e = vec![0u8; 64];
        e[..4].copy_from_slice(b"\x7fELF");
        e[4] = 2;
        e[5] = 1;
        e[32..40].copy_from_slice(&64u64.to_le_bytes()); // phoff
        e[40..48].copy_from_slice(&200u64.to_le_bytes()); // shoff
        e[54..56].copy_from_slice(&56u16.to_le_bytes());
        e[56..58].copy_from_slice(&1u16.to_le_bytes());
        e[58..60].copy_from_slice(&64u16.to_le_bytes());
        e[60..62].copy_from_slice(&3u16.to_le_bytes());
        assert_eq!(size_of_prefix(&e), Size::Bytes(200 + 192));
        e[4] = 1; // ELF32: not a cubin
        assert_eq!(size_of_prefix(&e), Size::Bad);
    }

    #[test]
    fn impossible_sizes_are_bad() {
        let mut f = fatbin(16, 0);
        f[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert_eq!(size_of_prefix(&f), Size::Bad);
        assert_eq!(unsafe { copy_image(f.as_ptr()) }, None);
    }
}
