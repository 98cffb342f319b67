//! Files kept whole: the bytes of a large file (its text redacted, see
//! `redacted_chunks.rs`), compressed in chunks of at most [`CHUNK_BYTES`] ending on
//! line ends, beside its reference row (`file_refs`), all written in one
//! transaction and read back whole or by line range.

use std::io::Write;
use std::path::Path;

use crate::db::backend::args;

use crate::db::gate::Write as WriteTx;
use crate::error::{Error, Result};
use crate::files::redacted_chunks::RedactedChunks;
use crate::filescan::{for_each_chunk, open_regular, Scanner, CHUNK_BYTES};
use crate::ids::now_ms;
use crate::parts::{check_content, check_identifier};
use crate::store::Store;

/// zstd's level 3, its default: about 300 MB/s on one core, within a few percent
/// of the ratio of levels twice as slow.
const ZSTD_LEVEL: i32 = 3;

/// A stored file: its reference row and what is known of its bytes.
#[derive(Clone, Debug)]
pub struct FileRecord {
    pub file_id: String,
    pub content_hash: String,
    pub path: String,
    pub file_type: String,
    pub token_count: i64,
    pub summary: String,
    pub created_at: i64,
    pub byte_count: i64,
    pub line_count: i64,
    pub stored_bytes: i64,
    pub is_text: bool,
}

/// What the caller knows of a file it stores: where it is, the hash its first
/// pass found, and the reference it made of it.
pub struct NewFile<'a> {
    pub source: &'a Path,
    pub sha256: &'a str,
    pub path: &'a str,
    pub file_type: &'a str,
    pub token_count: i64,
    pub summary: &'a str,
}

impl Store {
    /// The stored file `file_id`, if any (none in a file older than version 7,
    /// which a read-only store reads without upgrading).
    pub fn file_record(&self, file_id: &str) -> Result<Option<FileRecord>> {
        if !self.has_table("file_contents")? {
            return Ok(None);
        }
        self.conn
            .prepare_cached(
                "SELECT r.file_id, r.content_hash, r.path, r.file_type, r.token_count, r.summary,
                        r.created_at, c.byte_count, c.line_count, c.stored_bytes, c.is_text
                 FROM file_refs r JOIN file_contents c ON c.file_id = r.file_id
                 WHERE r.file_id = ?1",
            )?
            .query_opt(args![file_id], |row| {
                Ok(FileRecord {
                    file_id: row.get(0)?,
                    content_hash: row.get(1)?,
                    path: row.get(2)?,
                    file_type: row.get(3)?,
                    token_count: row.get(4)?,
                    summary: row.get(5)?,
                    created_at: row.get(6)?,
                    byte_count: row.get(7)?,
                    line_count: row.get(8)?,
                    stored_bytes: row.get(9)?,
                    is_text: row.get(10)?,
                })
            })
    }

    /// Stores the file at `new.source` under the id of `new.sha256`, reading it in
    /// chunks: its bytes, compressed, and its reference, in one transaction. The
    /// bytes are hashed again as they are stored; a file that changed since its
    /// hash was taken is refused and nothing is written. A file stored before (the
    /// same content) is not stored again: returns its record and `false`.
    pub fn store_file(&mut self, new: &NewFile<'_>) -> Result<(FileRecord, bool)> {
        check_identifier("path", new.path)?;
        check_identifier("file_type", new.file_type)?;
        check_content("summary", new.summary)?;
        let file_id = crate::filescan::file_id_of(new.sha256);
        if let Some(found) = self.file_record(&file_id)? {
            return Ok((found, false));
        }
        let file = open_regular(new.source)?;
        let redactor = self.default_redactor()?;
        let write = WriteTx::begin(&self.conn, &self.writer)?;
        // Another process may have stored the same content while this one waited.
        let stored_before: bool = write.query_row(
            "SELECT EXISTS (SELECT 1 FROM file_contents WHERE file_id = ?1)",
            args![&file_id],
            |row| row.get(0),
        )?;
        if stored_before {
            drop(write);
        } else {
            write_chunks_and_rows(&write, file, &file_id, new, redactor.as_deref())?;
            write.commit()?;
        }
        let record = self
            .file_record(&file_id)?
            .ok_or_else(|| Error::Internal(format!("{file_id} not found after storing it")))?;
        Ok((record, !stored_before))
    }

    /// The bytes of `file_id`, whole or lines `first..=last` (counted from 1, the
    /// range cut to the file's lines).
    pub fn read_file(&self, file_id: &str, lines: Option<(u64, u64)>) -> Result<Vec<u8>> {
        let record = self.known_file(file_id)?;
        let Some((first, last)) = lines else {
            let mut out = Vec::with_capacity(record.byte_count as usize);
            self.export_file(file_id, &mut out)?;
            return Ok(out);
        };
        if first == 0 || last < first {
            return Err(Error::invalid(
                "lines",
                format!("expected 1 <= first <= last, got {first}..{last}"),
            ));
        }
        let start = self.chunk_holding_newline(file_id, first.saturating_sub(1))?;
        let end = self.chunk_holding_newline(file_id, last)?;
        let (base, bytes) = self.chunks_between(file_id, start, end)?;
        Ok(cut_lines(&bytes, first - 1 - base.min(first - 1), last - base).to_vec())
    }

    /// Writes the bytes of `file_id` to `out` a chunk at a time; returns how many.
    pub fn export_file(&self, file_id: &str, out: &mut impl Write) -> Result<u64> {
        self.known_file(file_id)?;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT data FROM file_chunks WHERE file_id = ?1 ORDER BY ord")?;
        let mut rows = stmt.query(args![file_id])?;
        let mut written = 0_u64;
        while let Some(ref row) = rows.next()? {
            let raw = decompress(row.get::<&[u8]>(0)?)?;
            out.write_all(&raw)
                .map_err(|err| Error::invalid("out", format!("cannot write: {err}")))?;
            written += raw.len() as u64;
        }
        Ok(written)
    }

    /// Whether the database has `table` (a read-only store may read an older file).
    pub(crate) fn has_table(&self, table: &str) -> Result<bool> {
        self.conn
            .prepare_cached(self.conn.dialect(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1)",
                "SELECT EXISTS (SELECT 1 FROM information_schema.tables
                                WHERE table_schema = current_schema()
                                  AND table_name = CAST(?1 AS TEXT))",
            ))?
            .query_row(args![table], |row| row.get(0))
    }

    fn known_file(&self, file_id: &str) -> Result<FileRecord> {
        self.file_record(file_id)?.ok_or_else(|| Error::NotFound {
            kind: "file",
            id: file_id.to_string(),
        })
    }

    /// The chunk that holds newline number `newline` (from 1; 0 means the file's
    /// start): the last chunk with fewer newlines before it.
    fn chunk_holding_newline(&self, file_id: &str, newline: u64) -> Result<i64> {
        if newline == 0 {
            return Ok(0);
        }
        let ord: Option<i64> = self
            .conn
            .prepare_cached(
                "SELECT max(ord) FROM file_chunks WHERE file_id = ?1 AND first_line <= ?2",
            )?
            .query_row(args![file_id, (newline - 1) as i64], |row| row.get(0))?;
        Ok(ord.unwrap_or(0))
    }

    /// Chunks `start..=end` of a file decompressed and joined, with the newlines
    /// before the first of them.
    fn chunks_between(&self, file_id: &str, start: i64, end: i64) -> Result<(u64, Vec<u8>)> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT first_line, data FROM file_chunks
             WHERE file_id = ?1 AND ord BETWEEN ?2 AND ?3 ORDER BY ord",
        )?;
        let mut rows = stmt.query(args![file_id, start, end])?;
        let mut base = None;
        let mut joined = Vec::new();
        while let Some(ref row) = rows.next()? {
            base.get_or_insert(row.get::<i64>(0)? as u64);
            joined.extend(decompress(row.get::<&[u8]>(1)?)?);
        }
        Ok((base.unwrap_or(0), joined))
    }
}

/// Lines after the first `skip` newlines of `bytes`, up to and including newline
/// number `through` (or the end).
fn cut_lines(bytes: &[u8], skip: u64, through: u64) -> &[u8] {
    let mut newlines = memchr::memchr_iter(b'\n', bytes);
    let start = if skip == 0 {
        0
    } else {
        match newlines.nth(skip as usize - 1) {
            Some(at) => at + 1,
            None => return &[],
        }
    };
    let end = newlines
        .nth((through - skip).saturating_sub(1) as usize)
        .map_or(bytes.len(), |at| at + 1);
    &bytes[start..end.max(start)]
}

fn decompress(data: &[u8]) -> Result<Vec<u8>> {
    zstd::bulk::decompress(data, CHUNK_BYTES)
        .map_err(|err| Error::Internal(format!("a stored file chunk does not decompress: {err}")))
}

/// Compresses and inserts every chunk of `file`, checks the hash, and writes the
/// rows that describe the file, inside `write`.
fn write_chunks_and_rows(
    write: &WriteTx<'_>,
    file: std::fs::File,
    file_id: &str,
    new: &NewFile<'_>,
    redactor: Option<&crate::redact::Redactor>,
) -> Result<()> {
    let mut scanner = Scanner::new();
    let mut compressor = zstd::bulk::Compressor::new(ZSTD_LEVEL)
        .map_err(|err| Error::Internal(format!("zstd: {err}")))?;
    let mut insert = write.prepare_cached(
        "INSERT INTO file_chunks (file_id, ord, first_line, raw_bytes, data)
         VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    let (mut ord, mut stored) = (0_i64, 0_i64);
    let mut store_piece = |piece: &[u8], newlines_before: u64| {
        let data = compressor
            .compress(piece)
            .map_err(|err| Error::Internal(format!("zstd: {err}")))?;
        insert.execute(args![
            file_id,
            ord,
            newlines_before as i64,
            piece.len() as i64,
            data
        ])?;
        ord += 1;
        stored += data.len() as i64;
        Ok(())
    };
    // The stored text is the redacted one: its size and lines are what reads see.
    let mut pieces = RedactedChunks::new(redactor);
    for_each_chunk(file, &mut scanner, |chunk, _| {
        pieces.push(chunk, &mut store_piece)
    })?;
    let (stored_size, stored_lines, _) = pieces.finish(&mut store_piece)?;
    let scan = scanner.finish();
    if scan.sha256 != new.sha256 {
        return Err(Error::invalid(
            "path",
            format!(
                "{}: the file changed while it was being stored; nothing was stored",
                new.source.display()
            ),
        ));
    }
    if scan.bytes == 0 {
        return Err(Error::invalid("path", "the file is empty"));
    }
    write.execute(
        "INSERT INTO file_contents (file_id, byte_count, line_count, codec, chunk_count,
                                    stored_bytes, is_text)
         VALUES (?1, ?2, ?3, 'zstd', ?4, ?5, ?6)",
        args![
            file_id,
            stored_size as i64,
            stored_lines as i64,
            ord,
            stored,
            scan.utf8 && !scan.has_nul
        ],
    )?;
    write.execute(
        "INSERT INTO file_refs (file_id, content_hash, path, file_type, token_count, summary,
                                created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        args![
            file_id,
            scan.sha256,
            new.path,
            new.file_type,
            new.token_count,
            new.summary,
            now_ms()
        ],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::cut_lines;

    #[test]
    fn lines_are_cut_at_newlines_from_one() {
        let text = b"a\nbb\nccc\ndddd";
        assert_eq!(cut_lines(text, 0, 1), b"a\n");
        assert_eq!(cut_lines(text, 1, 2), b"bb\n");
        assert_eq!(cut_lines(text, 1, 3), b"bb\nccc\n");
        assert_eq!(cut_lines(text, 3, 4), b"dddd");
        assert_eq!(cut_lines(text, 3, 99), b"dddd");
        assert_eq!(cut_lines(text, 9, 99), b"");
    }
}
