//! Encryption at rest: a SQLite file opened with a key is encrypted whole by
//! SQLCipher (pages, write-ahead log, full-text index, media blobs).
//!
//! The key is a raw 256-bit key, handed to SQLCipher as `x'<64 hex digits>'`: it
//! is used as it is, with no key derivation at each connection (a passphrase
//! would cost PBKDF2-HMAC-SHA512 with 256,000 iterations on every connection the
//! store opens; see decisions 262–268 in docs/DECISIONS.md). SQLCipher 4's defaults apply:
//! AES-256-CBC per 4 KiB page, an HMAC-SHA512 per page, a random salt per file.
//!
//! SQLite reports a wrong key, a missing one and a key for a plain file alike
//! ("file is not a database"); [`explain`] tells them apart by the file's first
//! bytes, so the caller gets [`Error::EncryptionKey`] naming which it is.

use std::fmt;
use std::io::Read;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};

use crate::db::check;
use crate::error::{Error, Result};

/// Bytes in a key: SQLCipher's AES-256 key.
pub const KEY_BYTES: usize = 32;

/// The first bytes of a plain SQLite file; an encrypted one starts with its
/// random salt instead.
const PLAIN_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// The smallest page SQLCipher writes: an encrypted file is whole pages.
const SMALLEST_PAGE: u64 = 512;

/// A raw 256-bit database key. Its `Debug` shows no byte of it, and its bytes are
/// overwritten when it is dropped.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseKey(Box<[u8; KEY_BYTES]>);

impl DatabaseKey {
    /// The key of exactly [`KEY_BYTES`] bytes.
    pub fn new(bytes: &[u8]) -> Result<Self> {
        let key: [u8; KEY_BYTES] = bytes.try_into().map_err(|_| {
            Error::invalid(
                "encryption_key",
                format!(
                    "expected {KEY_BYTES} bytes (a 256-bit key), got {}",
                    bytes.len()
                ),
            )
        })?;
        Ok(Self(Box::new(key)))
    }

    /// The key as SQLCipher takes a raw key: `x'…'`, in hex. The caller wipes it.
    pub(crate) fn literal(&self) -> String {
        use std::fmt::Write as _;
        let mut text = String::with_capacity(KEY_BYTES * 2 + 3);
        text.push_str("x'");
        for byte in self.0.iter() {
            let _ = write!(text, "{byte:02X}");
        }
        text.push('\'');
        text
    }
}

impl fmt::Debug for DatabaseKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DatabaseKey(..)")
    }
}

impl Drop for DatabaseKey {
    fn drop(&mut self) {
        self.0.fill(0);
        // Keeps the writes above from being dropped as dead stores.
        std::hint::black_box(&self.0);
    }
}

/// Overwrites the bytes of `text` (a statement holding a key) before freeing them.
pub(crate) fn wipe(text: String) {
    let mut bytes = text.into_bytes();
    bytes.fill(0);
    std::hint::black_box(&bytes);
}

/// Keys `conn` with `key`: the first statement on a new connection, before
/// anything reads the file. Without a key, nothing is done (a plain file). The
/// error says nothing of the key.
pub(crate) fn apply(conn: &Connection, key: Option<&DatabaseKey>) -> Result<()> {
    let Some(key) = key else {
        return Ok(());
    };
    // SQLCipher reports a page that fails its check on stderr besides returning
    // the error; the caller gets it as `Error::EncryptionKey`. (The setting is
    // the process's, and this SQLCipher is linked into lossless alone.)
    conn.execute_batch("PRAGMA cipher_log_level = NONE;")
        .map_err(|_| not_sqlcipher())?;
    let literal = key.literal();
    let mut statement = String::with_capacity(literal.len() + 16);
    statement.push_str("PRAGMA key = \"");
    statement.push_str(&literal);
    statement.push_str("\";");
    wipe(literal);
    let keyed = conn.execute_batch(&statement);
    wipe(statement);
    keyed.map_err(|_| Error::invalid("encryption_key", "SQLCipher refused the key"))?;
    // A SQLite built without SQLCipher ignores `PRAGMA key` and would write the
    // file in the clear: refuse rather than store plaintext under a key.
    let cipher: Option<String> = conn
        .query_row("PRAGMA cipher_version", [], |row| row.get(0))
        .ok();
    if cipher.is_none_or(|version| version.is_empty()) {
        return Err(not_sqlcipher());
    }
    Ok(())
}

fn not_sqlcipher() -> Error {
    Error::invalid(
        "encryption_key",
        "this build of SQLite cannot encrypt (it is not SQLCipher)",
    )
}

/// `err`, met while first reading the file at `path`, as an
/// [`Error::EncryptionKey`] where a key is the reason SQLite could not read it:
/// a key given for a plain file, a key that does not open an encrypted one, or an
/// encrypted-looking file opened without a key. Anything else is returned as it is.
#[must_use]
pub(crate) fn explain(err: Error, path: &str, keyed: bool) -> Error {
    // SQLite's own "file is not a database"; the check's own refusals name the path.
    let Error::NotADatabase { path: named, .. } = &err else {
        return err;
    };
    if !named.is_empty() {
        return err;
    }
    let header = FileHeader::read(path);
    let reason = match (keyed, header) {
        (true, FileHeader::Plain) => {
            "the database is not encrypted, but a key was given: open it without a key, \
             or encrypt a copy of it (lossless encrypt)"
        }
        (true, _) => "the key does not open this database: a wrong key, or not a lossless database",
        (false, FileHeader::Pages) => {
            "not a lossless database, or an encrypted one opened without its key \
             (encryption_key=, LOSSLESS_DB_KEY or LOSSLESS_DB_KEY_FILE)"
        }
        (false, _) => return err,
    };
    Error::EncryptionKey {
        path: path.to_string(),
        reason: reason.to_string(),
    }
}

/// Writes an encrypted copy of the plain lossless database at `src` to `dst`
/// (`sqlcipher_export`): every table, index, trigger and the full-text index,
/// keyed with `key`, and the schema version. `src` is only read; `dst` must not
/// exist yet, and is removed again if the copy fails.
pub fn encrypt_copy(src: &str, dst: &str, key: &DatabaseKey) -> Result<()> {
    if !Path::new(src).is_file() {
        return Err(Error::DatabaseNotFound { path: src.into() });
    }
    if Path::new(dst).exists() {
        return Err(Error::invalid(
            "dst",
            format!("{dst}: a file is already there; encrypting never overwrites one"),
        ));
    }
    // Read-write and create: an attached database is opened with the main one's
    // flags, and `dst` must be created. Nothing is written to `src`.
    let conn = Connection::open_with_flags(
        src,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|err| Error::from(err).with_path(src))?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    let version =
        check::inspect(&conn, src).map_err(|err| explain(err, src, false).with_path(src))?;
    if version == 0 {
        return Err(Error::NotADatabase {
            path: src.into(),
            reason: "it holds no lossless schema (an empty file?)".into(),
        });
    }
    let copied = export(&conn, dst, key, version);
    drop(conn);
    if copied.is_err() {
        let _ = std::fs::remove_file(dst);
        let _ = std::fs::remove_file(format!("{dst}-journal"));
    }
    copied.map_err(|err| err.with_path(dst))
}

fn export(conn: &Connection, dst: &str, key: &DatabaseKey, version: i64) -> Result<()> {
    let literal = key.literal();
    let attached = conn.execute(
        "ATTACH DATABASE ?1 AS encrypted KEY ?2",
        rusqlite::params![dst, literal],
    );
    wipe(literal);
    attached?;
    // The export copies rows and schema but not the header's user version.
    conn.query_row("SELECT sqlcipher_export('encrypted')", [], |_| Ok(()))?;
    conn.execute_batch(&format!("PRAGMA encrypted.user_version = {version};"))?;
    conn.execute_batch("DETACH DATABASE encrypted")?;
    Ok(())
}

/// What the first bytes of a file say about its encryption.
enum FileHeader {
    /// A plain SQLite file.
    Plain,
    /// Something else, in whole pages: an encrypted database can look like this.
    Pages,
    /// Anything else (no file, a short or ragged one).
    Other,
}

impl FileHeader {
    fn read(path: &str) -> Self {
        let Ok(mut file) = std::fs::File::open(Path::new(path)) else {
            return FileHeader::Other;
        };
        let size = file.metadata().map_or(0, |meta| meta.len());
        let mut first = [0u8; PLAIN_HEADER.len()];
        if file.read_exact(&mut first).is_err() {
            return FileHeader::Other;
        }
        if &first == PLAIN_HEADER {
            FileHeader::Plain
        } else if size >= SMALLEST_PAGE && size % SMALLEST_PAGE == 0 {
            FileHeader::Pages
        } else {
            FileHeader::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_has_thirty_two_bytes_and_shows_none_of_them() {
        assert!(DatabaseKey::new(&[7; 31]).is_err());
        assert!(DatabaseKey::new(&[7; 33]).is_err());
        let key = DatabaseKey::new(&[0xAB; KEY_BYTES]).unwrap();
        assert_eq!(format!("{key:?}"), "DatabaseKey(..)");
        assert_eq!(key.literal(), format!("x'{}'", "AB".repeat(KEY_BYTES)));
    }

    #[test]
    fn a_keyed_connection_is_sqlcipher() {
        let conn = Connection::open_in_memory().unwrap();
        let key = DatabaseKey::new(&[1; KEY_BYTES]).unwrap();
        apply(&conn, Some(&key)).unwrap();
        conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            .unwrap();
    }
}
