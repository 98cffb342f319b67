//! One streamed pass over a file's bytes: its content hash, size, line count, and
//! whether it is text (UTF-8 without NUL bytes). Memory stays at one chunk however
//! large the file is.

use std::io::{self, Read};

use sha2::{Digest, Sha256};

/// Bytes read at a time, and the size of one stored chunk of a file: 1 MiB keeps a
/// line-range read to a chunk or two and compresses as well as larger blocks.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Hex digits of the content hash a file id keeps: `file_` plus 32 hex digits (128
/// bits) is the longest reference the file-id extractor accepts.
pub const FILE_ID_HEX: usize = 32;

/// What one pass over a file found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileScan {
    /// SHA-256 of the bytes, lowercase hex.
    pub sha256: String,
    pub bytes: u64,
    /// Newline bytes in the file.
    pub newlines: u64,
    /// A NUL byte occurs somewhere: text files never hold one.
    pub has_nul: bool,
    /// The bytes are valid UTF-8 throughout.
    pub utf8: bool,
}

impl FileScan {
    /// The file's id: `file_` and the first [`FILE_ID_HEX`] hex digits of its hash.
    #[must_use]
    pub fn file_id(&self) -> String {
        file_id_of(&self.sha256)
    }

    /// Lines as an editor counts them: a last line without a newline counts too.
    #[must_use]
    pub fn lines(&self, ends_with_newline: bool) -> u64 {
        if self.bytes == 0 {
            0
        } else {
            self.newlines + u64::from(!ends_with_newline)
        }
    }
}

/// The file id of a content hash given in hex.
#[must_use]
pub fn file_id_of(sha256_hex: &str) -> String {
    let hex = &sha256_hex[..sha256_hex.len().min(FILE_ID_HEX)];
    format!("file_{hex}")
}

/// Takes a file's bytes chunk by chunk, in order.
pub struct Scanner {
    hasher: Sha256,
    bytes: u64,
    newlines: u64,
    has_nul: bool,
    utf8: bool,
    /// The start of a character cut by the end of the last chunk (at most 3 bytes).
    pending: Vec<u8>,
    last_byte: Option<u8>,
}

impl Default for Scanner {
    fn default() -> Self {
        Self::new()
    }
}

impl Scanner {
    #[must_use]
    pub fn new() -> Self {
        Self {
            hasher: Sha256::new(),
            bytes: 0,
            newlines: 0,
            has_nul: false,
            utf8: true,
            pending: Vec::with_capacity(4),
            last_byte: None,
        }
    }

    /// Newlines seen so far: the line a next chunk starts on, counted from 0.
    #[must_use]
    pub fn newlines(&self) -> u64 {
        self.newlines
    }

    pub fn update(&mut self, chunk: &[u8]) {
        if chunk.is_empty() {
            return;
        }
        self.hasher.update(chunk);
        self.bytes += chunk.len() as u64;
        self.newlines += memchr::memchr_iter(b'\n', chunk).count() as u64;
        self.has_nul = self.has_nul || memchr::memchr(0, chunk).is_some();
        self.last_byte = chunk.last().copied();
        self.check_utf8(chunk);
    }

    /// Validates `chunk` as the continuation of what came before: a character cut
    /// at a chunk boundary is completed from the next chunk's first bytes.
    fn check_utf8(&mut self, mut chunk: &[u8]) {
        if !self.utf8 {
            return;
        }
        if !self.pending.is_empty() {
            let width = utf8_width(self.pending[0]);
            let take = (width - self.pending.len()).min(chunk.len());
            self.pending.extend_from_slice(&chunk[..take]);
            chunk = &chunk[take..];
            if self.pending.len() < width {
                return;
            }
            if std::str::from_utf8(&self.pending).is_err() {
                self.utf8 = false;
                return;
            }
            self.pending.clear();
        }
        if let Err(err) = std::str::from_utf8(chunk) {
            match err.error_len() {
                Some(_) => self.utf8 = false,
                None => self.pending = chunk[err.valid_up_to()..].to_vec(),
            }
        }
    }

    /// Whether the bytes so far end with a newline.
    #[must_use]
    pub fn ends_with_newline(&self) -> bool {
        self.last_byte == Some(b'\n')
    }

    #[must_use]
    pub fn finish(self) -> FileScan {
        FileScan {
            sha256: hex(&self.hasher.finalize()),
            bytes: self.bytes,
            newlines: self.newlines,
            has_nul: self.has_nul,
            // A character still cut at the end of the file is not valid UTF-8.
            utf8: self.utf8 && self.pending.is_empty(),
        }
    }
}

/// The length of the UTF-8 sequence a lead byte starts (a valid prefix's lead, as
/// `from_utf8` reported it).
fn utf8_width(lead: u8) -> usize {
    match lead {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        _ => 2,
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(64), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

/// Reads `reader` to its end into `buf`-sized chunks, handing each to `each`
/// (after the scanner took it) with the newlines seen before it.
pub fn for_each_chunk(
    mut reader: impl Read,
    scanner: &mut Scanner,
    mut each: impl FnMut(&[u8], u64) -> crate::Result<()>,
) -> crate::Result<()> {
    let mut buf = vec![0_u8; CHUNK_BYTES];
    loop {
        let filled = fill(&mut reader, &mut buf).map_err(|err| io_error(&err))?;
        if filled == 0 {
            return Ok(());
        }
        let before = scanner.newlines();
        scanner.update(&buf[..filled]);
        each(&buf[..filled], before)?;
        if filled < buf.len() {
            return Ok(());
        }
    }
}

/// Reads until `buf` is full or the reader ends; returns how much was read.
fn fill(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

fn io_error(err: &io::Error) -> crate::Error {
    crate::Error::invalid("path", format!("cannot read the file: {err}"))
}

/// Scans a whole file (the first of the two passes of storing one).
pub fn scan_path(path: &std::path::Path) -> crate::Result<(FileScan, bool)> {
    let file = open_regular(path)?;
    let mut scanner = Scanner::new();
    for_each_chunk(file, &mut scanner, |_, _| Ok(()))?;
    let ends = scanner.ends_with_newline();
    Ok((scanner.finish(), ends))
}

/// Opens `path` for reading, refusing what is not a regular file with a reason.
pub fn open_regular(path: &std::path::Path) -> crate::Result<std::fs::File> {
    let shown = path.display();
    let meta = std::fs::metadata(path).map_err(|err| match err.kind() {
        io::ErrorKind::NotFound => crate::Error::invalid("path", format!("{shown}: no such file")),
        io::ErrorKind::PermissionDenied => {
            crate::Error::invalid("path", format!("{shown}: permission denied"))
        }
        _ => crate::Error::invalid("path", format!("{shown}: {err}")),
    })?;
    if meta.is_dir() {
        return Err(crate::Error::invalid(
            "path",
            format!("{shown}: is a directory, not a file"),
        ));
    }
    std::fs::File::open(path).map_err(|err| {
        let reason = if err.kind() == io::ErrorKind::PermissionDenied {
            "permission denied".to_string()
        } else {
            err.to_string()
        };
        crate::Error::invalid("path", format!("{shown}: {reason}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_in_pieces(bytes: &[u8], piece: usize) -> FileScan {
        let mut scanner = Scanner::new();
        for chunk in bytes.chunks(piece.max(1)) {
            scanner.update(chunk);
        }
        scanner.finish()
    }

    #[test]
    fn the_hash_is_sha256_and_the_id_keeps_32_hex_digits() {
        let scan = scan_in_pieces(b"abc", 1);
        assert_eq!(
            scan.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(scan.file_id(), "file_ba7816bf8f01cfea414140de5dae2223");
        assert_eq!(scan.bytes, 3);
        assert!(scan.utf8 && !scan.has_nul);
    }

    #[test]
    fn characters_cut_at_any_boundary_still_read_as_utf8() {
        let text = "héllo wörld ✓ 𝄞 end\n".repeat(3);
        for piece in 1..9 {
            let scan = scan_in_pieces(text.as_bytes(), piece);
            assert!(scan.utf8, "piece {piece}");
            assert_eq!(scan.newlines, 3);
        }
    }

    #[test]
    fn invalid_or_cut_utf8_and_nul_bytes_are_noticed() {
        assert!(!scan_in_pieces(b"caf\xe9 au lait", 4).utf8);
        assert!(!scan_in_pieces("✓".as_bytes().split_at(2).0, 1).utf8);
        assert!(scan_in_pieces(b"a\0b", 2).has_nul);
    }

    proptest::proptest! {
        #[test]
        fn chunking_never_changes_the_scan(text in "\\PC{0,200}", piece in 1_usize..16) {
            let whole = scan_in_pieces(text.as_bytes(), text.len().max(1));
            let pieces = scan_in_pieces(text.as_bytes(), piece);
            proptest::prop_assert_eq!(&whole, &pieces);
            proptest::prop_assert!(whole.utf8);
        }
    }
}
