//! A file's bytes cut again on line ends and redacted on the way to its chunks.
//!
//! The file is read in chunks of [`CHUNK_BYTES`], which may end inside a line (or
//! a character, or a secret). Each piece stored here ends on a line end instead:
//! what a chunk lacks of its last line waits for the next, so a secret inside a
//! line is always seen whole. Text (UTF-8 without NUL) goes through the redactor;
//! anything else is stored as it came. A piece never exceeds [`CHUNK_BYTES`], the
//! most a chunk decompresses to.

use crate::error::Result;
use crate::filescan::CHUNK_BYTES;
use crate::redact::Redactor;

/// Cuts and redacts a file's bytes, handing each piece to be stored with the
/// newlines stored before it.
pub(crate) struct RedactedChunks<'r> {
    redactor: Option<&'r Redactor>,
    pending: Vec<u8>,
    newlines: u64,
    bytes: u64,
    ends_with_newline: bool,
    /// Secrets replaced, over the whole file.
    pub(crate) redacted: usize,
}

impl<'r> RedactedChunks<'r> {
    pub(crate) fn new(redactor: Option<&'r Redactor>) -> Self {
        Self {
            redactor,
            pending: Vec::new(),
            newlines: 0,
            bytes: 0,
            ends_with_newline: false,
            redacted: 0,
        }
    }

    /// Takes the next bytes read; stores every complete line among what waits.
    pub(crate) fn push(
        &mut self,
        chunk: &[u8],
        store: &mut impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        self.pending.extend_from_slice(chunk);
        let ready = match memchr::memrchr(b'\n', &self.pending) {
            Some(at) => at + 1,
            // No line end in a whole chunk's worth: a binary file, or one huge line.
            None if self.pending.len() >= CHUNK_BYTES => self.pending.len(),
            None => return Ok(()),
        };
        let rest = self.pending.split_off(ready);
        let ready = std::mem::replace(&mut self.pending, rest);
        self.emit(&ready, store)
    }

    /// Stores what still waits; returns the stored bytes and lines as an editor
    /// counts them.
    pub(crate) fn finish(
        mut self,
        store: &mut impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<(u64, u64, usize)> {
        let rest = std::mem::take(&mut self.pending);
        self.emit(&rest, store)?;
        let lines = if self.bytes == 0 {
            0
        } else {
            self.newlines + u64::from(!self.ends_with_newline)
        };
        Ok((self.bytes, lines, self.redacted))
    }

    fn emit(
        &mut self,
        ready: &[u8],
        store: &mut impl FnMut(&[u8], u64) -> Result<()>,
    ) -> Result<()> {
        if ready.is_empty() {
            return Ok(());
        }
        let text = std::str::from_utf8(ready)
            .ok()
            .filter(|text| !text.contains('\0'));
        let redacted = match (self.redactor, text) {
            (Some(redactor), Some(text)) => {
                let result = redactor.redact(text);
                self.redacted += result.found.iter().map(|found| found.count).sum::<usize>();
                Some(result.text.into_owned())
            }
            _ => None,
        };
        let bytes = redacted.as_ref().map_or(ready, |text| text.as_bytes());
        for piece in pieces(bytes) {
            store(piece, self.newlines)?;
            self.newlines += memchr::memchr_iter(b'\n', piece).count() as u64;
            self.bytes += piece.len() as u64;
            self.ends_with_newline = piece.last() == Some(&b'\n');
        }
        Ok(())
    }
}

/// `bytes` in pieces of at most [`CHUNK_BYTES`], each ending on a line end where
/// one falls in its last half.
fn pieces(mut bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    while bytes.len() > CHUNK_BYTES {
        let window = &bytes[..CHUNK_BYTES];
        let cut = memchr::memrchr(b'\n', window)
            .filter(|at| *at >= CHUNK_BYTES / 2)
            .map_or(CHUNK_BYTES, |at| at + 1);
        out.push(&bytes[..cut]);
        bytes = &bytes[cut..];
    }
    if !bytes.is_empty() {
        out.push(bytes);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{RedactedChunks, CHUNK_BYTES};
    use crate::redact::{Redactor, RuleSet};

    fn stored(input: &[&[u8]], redactor: Option<&Redactor>) -> (Vec<(Vec<u8>, u64)>, u64, u64) {
        let mut pieces = Vec::new();
        let mut store = |piece: &[u8], before: u64| {
            pieces.push((piece.to_vec(), before));
            Ok(())
        };
        let mut chunks = RedactedChunks::new(redactor);
        for chunk in input {
            chunks.push(chunk, &mut store).unwrap();
        }
        let (bytes, lines, _) = chunks.finish(&mut store).unwrap();
        (pieces, bytes, lines)
    }

    #[test]
    fn pieces_end_on_lines_and_keep_every_byte_without_a_secret() {
        let (pieces, bytes, lines) = stored(&[b"one\ntw", b"o\nthree"], None);
        assert_eq!(
            pieces,
            [
                (b"one\n".to_vec(), 0),
                (b"two\n".to_vec(), 1),
                (b"three".to_vec(), 2)
            ]
        );
        assert_eq!((bytes, lines), (13, 3));
    }

    #[test]
    fn a_secret_split_across_reads_is_redacted_whole() {
        let redactor = Redactor::new(&[7; 32], RuleSet::Defaults);
        let token = format!("ghp_{}", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dF3hJ5");
        let text = format!("line one\ntoken = {token}\nlast\n");
        let (head, tail) = text.as_bytes().split_at(20);
        let (pieces, _, lines) = stored(&[head, tail], Some(&redactor));
        let joined: Vec<u8> = pieces.iter().flat_map(|(piece, _)| piece.clone()).collect();
        let joined = String::from_utf8(joined).unwrap();
        assert!(!joined.contains(&token) && joined.contains("[redacted:github-token:"));
        assert_eq!(lines, 3);
    }

    #[test]
    fn binary_without_line_ends_is_stored_as_it_came_in_bounded_pieces() {
        let blob = vec![0_u8; CHUNK_BYTES * 2 + 5];
        let redactor = Redactor::new(&[7; 32], RuleSet::Defaults);
        let (pieces, bytes, _) = stored(
            &[&blob[..CHUNK_BYTES], &blob[CHUNK_BYTES..]],
            Some(&redactor),
        );
        assert!(pieces.iter().all(|(piece, _)| piece.len() <= CHUNK_BYTES));
        assert_eq!(bytes, blob.len() as u64);
    }
}
