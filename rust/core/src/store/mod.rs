//! The append-only SQLite store: one [`Store`] per connection, any number per file.

mod readonly;

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::arena::entries as arena;
use crate::context::view;
use crate::db::{backend, check, cipher, gate};
use crate::error::{Error, Result};
use crate::recall::{grep, tokenizer};
use crate::tokens::TokenCounter;

pub use crate::db::cipher::{encrypt_copy, DatabaseKey, KEY_BYTES};
pub use crate::db::schema;

pub use crate::arena::entries::{ArenaWrite, Ceiling, WriteOutcome};
pub use crate::arena::memory_recall::{NewestRecall, RecallHit};
pub use crate::compaction::commit::CommitResult;
pub use crate::compaction::extractive_commit::SpanCommit;
pub use crate::compaction::prune::PruneResult;
pub use crate::compaction::round::{leaf_runs, LeafWriter, RoundOutcome};
pub use crate::compaction::span::SpanInfo;
pub use crate::compaction::summaries::{SummaryRow, TextResult};
pub use crate::context::view::{Assembled, ItemKind, RenderedItem, ViewItem, ViewStats};
pub use crate::files::records::{FileRecord, NewFile};
pub use crate::history::events::{EventPage, EventRow, WriteEvent};
pub use crate::history::media::MediaPolicy;
pub use crate::history::messages::{AppendResult, MessageRecord, Usage};
pub use crate::history::sessions::{SessionInfo, SessionSummary};
pub use crate::history::streams::{StreamRow, INTERRUPTED};
pub use crate::maps::{MapOutcome, MapRun};
pub use crate::recall::dag::{DagNode, StoreStats};
pub use crate::recall::expand::{ExpandedMessage, Expansion, Focus};
pub use crate::recall::grep::{GrepHit, GrepMode};
pub use crate::recall::index::BACKLOG_LIMIT;
pub use crate::recall::read::MessageRead;
pub use readonly::OLDEST_READABLE_SCHEMA;

/// How hard a commit waits for the disk (`PRAGMA synchronous`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Committed data survives a process crash; the default in WAL mode.
    Normal,
    /// Every commit is flushed to the disk: survives power loss, costs an fsync.
    Full,
}

impl Durability {
    pub fn parse(value: &str) -> Result<Self> {
        match value {
            "normal" => Ok(Durability::Normal),
            "full" => Ok(Durability::Full),
            other => Err(Error::invalid(
                "synchronous",
                format!("expected 'normal' or 'full', got {other:?}"),
            )),
        }
    }
}

/// The longest busy timeout: SQLite takes it in milliseconds, as a C `int`.
pub const MAX_BUSY_TIMEOUT_MS: u64 = i32::MAX as u64;

/// Options for [`Store::open`].
#[derive(Clone, Debug)]
pub struct OpenOptions {
    pub durability: Durability,
    /// How long a writer waits for another writer's lock, at most [`MAX_BUSY_TIMEOUT_MS`].
    pub busy_timeout: Duration,
    /// The key of an encrypted SQLite file (SQLCipher), applied on every
    /// connection the store opens; a new file opened with a key is encrypted.
    /// None: a plain file. Refused on a PostgreSQL URL.
    pub key: Option<DatabaseKey>,
}

impl OpenOptions {
    /// Options with the busy timeout in milliseconds, as the Python API takes it.
    pub fn new(durability: Durability, busy_timeout_ms: i64) -> Result<Self> {
        let busy_timeout = u64::try_from(busy_timeout_ms)
            .ok()
            .filter(|ms| *ms <= MAX_BUSY_TIMEOUT_MS)
            .map(Duration::from_millis)
            .ok_or_else(|| busy_timeout_error(busy_timeout_ms))?;
        Ok(Self {
            durability,
            busy_timeout,
            key: None,
        })
    }

    /// These options with the key of an encrypted file (None: a plain file).
    #[must_use]
    pub fn with_key(mut self, key: Option<DatabaseKey>) -> Self {
        self.key = key;
        self
    }

    fn check(&self, path: &str) -> Result<()> {
        if self.key.is_some() && crate::pg::is_postgres_url(path) {
            return Err(Error::invalid(
                "encryption_key",
                "a key encrypts a SQLite file; a PostgreSQL server encrypts its own \
                 storage (and sslmode= the connection)",
            ));
        }
        if self.busy_timeout.as_millis() > u128::from(MAX_BUSY_TIMEOUT_MS) {
            return Err(busy_timeout_error(self.busy_timeout.as_millis()));
        }
        Ok(())
    }
}

fn busy_timeout_error(ms: impl std::fmt::Display) -> Error {
    Error::invalid(
        "busy_timeout_ms",
        format!("expected 0 to {MAX_BUSY_TIMEOUT_MS} milliseconds, got {ms}"),
    )
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self {
            durability: Durability::Normal,
            busy_timeout: Duration::from_secs(30),
            key: None,
        }
    }
}

/// One connection to a lossless database, with its per-session caches.
pub struct Store {
    pub(crate) conn: backend::Conn,
    pub(crate) path: String,
    /// The file's gate, shared by every store of this process on the same file (one
    /// writer at a time), and this connection's checkpoint mark.
    pub(crate) writer: gate::Writer,
    pub(crate) sessions: HashMap<String, SessionInfo>,
    pub(crate) views: view::ViewCache,
    /// A second, read-only connection to the same file, opened the first time a
    /// read is split across two threads.
    pub(crate) reader: Option<backend::Conn>,
    /// Opening `reader` failed (or the database is not a file): reads stay on `conn`.
    pub(crate) reader_failed: bool,
    /// Opened with [`Store::open_read_only`]: nothing is written, not even the
    /// search index's backlog.
    pub(crate) read_only: bool,
    /// Index rows each searched word matched, and the index size when counted.
    pub(crate) word_counts: grep::WordCounts,
    /// The `data_version` of the file when a read-only store last indexed the rows
    /// queued for the index (see `pending.rs`): unchanged, the index is reused.
    pub(crate) pending_version: std::cell::Cell<Option<i64>>,
    /// The languages this connection's tokenizer indexed documents in.
    pub(crate) indexed_languages: std::sync::Arc<tokenizer::Seen>,
    /// Each session's live arena entries as last read.
    pub(crate) arena: arena::ArenaCache,
    /// The key of an encrypted file, for the reader connection opened later.
    pub(crate) key: Option<DatabaseKey>,
    /// The compaction leases this connection holds on PostgreSQL, by session, with
    /// their holders (see `lease.rs`).
    pub(crate) leases: HashMap<String, String>,
    /// What requests send inline of a view's images and documents.
    pub(crate) media_policy: crate::history::media::MediaPolicy,
    /// How each session's writes are redacted (see `history/redaction.rs`).
    pub(crate) redaction: crate::history::redaction::Redaction,
}

impl Store {
    /// Opens (creating if needed) the database at `path`; `:memory:` gives a private one.
    ///
    /// A file that is not a lossless database, or a damaged one, is refused before
    /// anything is written to it (see `check`).
    ///
    /// A `postgresql://` URL opens the database on that server instead, creating or
    /// upgrading its schema; errors name the URL without its password.
    pub fn open(path: &str, options: &OpenOptions) -> Result<Self> {
        options.check(path)?;
        if crate::pg::is_postgres_url(path) {
            return Self::open_postgres(path, options, false);
        }
        Self::open_checked(path, options).map_err(|err| err.with_path(path))
    }

    /// A store on the PostgreSQL database at `url`; a read-only one neither
    /// creates nor upgrades the schema (a replica could not), it requires it.
    fn open_postgres(url: &str, options: &OpenOptions, read_only: bool) -> Result<Self> {
        let shown = crate::pg::redact(url);
        let mut client = crate::pg::connect(url)?;
        if read_only {
            let found = crate::pg::stored_version(&mut client)
                .map_err(|err| crate::pg::error_at(&err, &shown))?;
            if found != Some(crate::pg::schema::SCHEMA_VERSION) {
                return Err(Error::CannotOpen {
                    path: shown,
                    reason: format!(
                        "schema version {}, this build reads {}: prepare the database first",
                        found.unwrap_or(0),
                        crate::pg::schema::SCHEMA_VERSION
                    ),
                });
            }
        } else {
            crate::pg::migrate(&mut client, &shown)?;
        }
        let conn = backend::Conn::Postgres(backend::PgConn::new(client, &shown));
        conn.set_lock_wait(options.busy_timeout)?;
        if read_only {
            // As SQLite's read-only file does, the server refuses every write but
            // the index's bookkeeping (see `Write::begin_bookkeeping`).
            conn.batch("SET default_transaction_read_only = on")?;
        }
        let mut store = Self::on(
            conn,
            url,
            read_only,
            std::sync::Arc::new(tokenizer::Seen::default()),
            options,
        );
        // Reads stay on the one connection.
        store.reader_failed = true;
        Ok(store)
    }

    fn open_checked(path: &str, options: &OpenOptions) -> Result<Self> {
        if path.contains('\0') {
            return Err(Error::invalid("path", "contains a NUL byte"));
        }
        if path != ":memory:" && Path::new(path).is_dir() {
            return Err(Error::CannotOpen {
                path: path.into(),
                reason: "it is a directory".into(),
            });
        }
        let mut conn = Connection::open(path).map_err(|err| open_error(path, err))?;
        cipher::apply(&conn, options.key.as_ref())?;
        conn.busy_timeout(options.busy_timeout)
            .map_err(|err| open_error(path, err))?;
        let found = check::inspect(&conn, path)
            .map_err(|err| cipher::explain(err, path, options.key.is_some()))?;
        configure_waiting(&conn, options).map_err(|err| open_error(path, err))?;
        let indexed_languages = tokenizer::register(&conn)?;
        crate::db::schema::migrate(&mut conn, path)?;
        if found == 0 && path != ":memory:" {
            // A new database's schema goes from the WAL into the main file at once, so
            // that a copy of the main file alone (without its -wal) holds the schema
            // and its page count: cut short, such a copy reads as damaged, not as an
            // empty file to create a new schema in. Once per database; `PASSIVE`
            // never waits for readers.
            conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))?;
        }
        Ok(Self::on(
            backend::Conn::Sqlite(conn),
            path,
            false,
            indexed_languages,
            options,
        ))
    }

    /// A store on the configured connection `conn` to the database at `path`, its
    /// tokenizer registered.
    fn on(
        conn: backend::Conn,
        path: &str,
        read_only: bool,
        indexed_languages: std::sync::Arc<tokenizer::Seen>,
        options: &OpenOptions,
    ) -> Self {
        Self {
            writer: gate::Writer::new(&conn, path, options.busy_timeout),
            conn,
            path: path.to_string(),
            sessions: HashMap::new(),
            redaction: crate::history::redaction::Redaction::default(),
            views: view::ViewCache::default(),
            reader: None,
            reader_failed: false,
            read_only,
            word_counts: grep::WordCounts::default(),
            pending_version: std::cell::Cell::new(None),
            indexed_languages,
            arena: arena::ArenaCache::default(),
            key: options.key.clone(),
            leases: HashMap::new(),
            media_policy: crate::history::media::MediaPolicy::default(),
        }
    }

    /// The path this store was opened with.
    #[must_use]
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<i64> {
        match &self.conn {
            backend::Conn::Sqlite(conn) => {
                Ok(conn.query_row("PRAGMA user_version", [], |row| row.get(0))?)
            }
            backend::Conn::Postgres(conn) => {
                let found = crate::pg::stored_version(&mut conn.client())
                    .map_err(|err| crate::pg::error_at(&err, conn.url()))?;
                Ok(found.unwrap_or(0))
            }
        }
    }

    /// Sets how many pages the write-ahead log may hold before a write on this
    /// connection copies them into the database file (a passive checkpoint, once
    /// the write is committed; [`gate::DEFAULT_CHECKPOINT_PAGES`] by default). The
    /// write that crosses the mark does that work before it returns, so a
    /// connection whose writes must come back fast can leave most of it to another
    /// connection on the same file that writes too.
    pub fn set_checkpoint_pages(&mut self, pages: u32) {
        self.writer.set_checkpoint_pages(pages);
    }

    /// Closes the connection (and its reader). The last store of this process on a
    /// database file first copies the write-ahead log into the file and empties it,
    /// so the file alone holds every committed write: a copy of it taken after
    /// closing is complete. Best effort: a reader or writer of another process
    /// makes the copy stop where it would wait, without an error, and that
    /// process's own close finishes it.
    pub fn close(mut self) {
        // The reader is idle between calls; closed first, it holds no snapshot the
        // checkpoint would wait for.
        self.reader = None;
        if self.read_only || !self.writer.is_last_on_file() {
            return;
        }
        if let backend::Conn::Sqlite(conn) = &self.conn {
            truncate_log(conn);
        }
    }

    /// The token counter of a session's model.
    pub fn counter(&mut self, session_id: &str) -> Result<TokenCounter> {
        Ok(self.session(session_id)?.counter.clone())
    }
}

/// Copies the write-ahead log of `conn`'s file into the file and cuts it to zero
/// bytes (`PRAGMA wal_checkpoint(TRUNCATE)`), without waiting on another
/// connection: where another process reads or writes, SQLite copies what it can
/// and reports busy, which is no failure here. An in-memory database has no log.
fn truncate_log(conn: &Connection) {
    if conn.path().is_none_or(str::is_empty) {
        return;
    }
    // A busy handler would hold `close` for up to the busy timeout (30 s by
    // default) behind another process's transaction; a copy that stops early is
    // completed by whichever connection closes last.
    if conn.busy_timeout(Duration::ZERO).is_ok() {
        let _ = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
    }
}

/// Registers the full-text index's tokenizer (`lossless`) on a connection opened
/// without a [`Store`], which can then query the `fts` table; without it SQLite
/// reports `no such tokenizer: lossless` there. Every other table reads as is.
pub fn register_search_tokenizer(conn: &Connection) -> Result<()> {
    tokenizer::register(conn).map(|_| ())
}

/// [`configure`], tried again while another connection holds the lock it needs, for
/// up to the busy timeout: switching a new file to WAL takes the write lock from
/// inside a read, which SQLite refuses at once, without waiting, to rule out a
/// deadlock between two connections doing the same.
fn configure_waiting(conn: &Connection, options: &OpenOptions) -> rusqlite::Result<()> {
    let deadline = Instant::now() + options.busy_timeout;
    loop {
        match configure(conn, options) {
            Err(err)
                if err.sqlite_error_code() == Some(ErrorCode::DatabaseBusy)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            result => return result,
        }
    }
}

fn configure(conn: &Connection, options: &OpenOptions) -> rusqlite::Result<()> {
    // The first statement reads the file header: a non-database fails here.
    conn.query_row("PRAGMA journal_mode = WAL", [], |row| {
        row.get::<_, String>(0)
    })?;
    let synchronous = match options.durability {
        Durability::Normal => "NORMAL",
        Durability::Full => "FULL",
    };
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {synchronous};
         PRAGMA foreign_keys = ON;
         PRAGMA secure_delete = ON; -- an erasure leaves no bytes of what it removed
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -65536;
         PRAGMA mmap_size = 268435456;"
    ))?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// A read-only connection to the database file at `path`, keyed and configured
/// like the store's own; `None` when `path` is not a file on disk (`:memory:`, a
/// temporary database) or it cannot be opened.
pub(crate) fn open_reader(path: &str, key: Option<&DatabaseKey>) -> Option<backend::Conn> {
    if !Path::new(path).is_file() {
        return None;
    }
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags).ok()?;
    cipher::apply(&conn, key).ok()?;
    conn.execute_batch(
        "PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -65536;
         PRAGMA mmap_size = 268435456;",
    )
    .ok()?;
    conn.set_prepared_statement_cache_capacity(16);
    tokenizer::register(&conn).ok()?;
    Some(backend::Conn::Sqlite(conn))
}

/// An error while opening: one that keeps the file from being opened or written
/// says the database cannot be opened.
fn open_error(path: &str, err: rusqlite::Error) -> Error {
    match err.sqlite_error_code() {
        Some(ErrorCode::CannotOpen | ErrorCode::ReadOnly | ErrorCode::PermissionDenied) => {
            Error::CannotOpen {
                path: path.into(),
                reason: err.to_string(),
            }
        }
        _ => Error::from(err),
    }
}
