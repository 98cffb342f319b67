//! One writer at a time per database file within a process, handed over at once,
//! and the write-ahead log's checkpoints done after the writer lets go.
//!
//! SQLite lets one connection write at a time and makes the others wait by
//! sleeping and trying again, a millisecond at first and longer after. A session
//! writes its turns on one connection and compacts on another, so a turn that
//! arrived while a round committed slept at least a millisecond even when the
//! commit took a tenth of that. Every store of a process on the same file shares
//! one gate, taken before a write begins: a waiting writer wakes the moment the
//! other lets go. Writers in other processes still meet SQLite's lock.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses its mark,
//! which would keep the gate shut while it copies pages. A write-ahead-log hook
//! replaces it: it notes the log's length at each commit, and the writer copies
//! pages (a passive checkpoint, which never blocks other writers) once the gate is
//! open again.
//!
//! A write made on an event loop must not wait at all: [`Store::without_waiting`]
//! runs one with the busy timeout at zero and the gate only tried, and gives up,
//! having written nothing, where it would otherwise wait (the lock held, here or by
//! another process) or do work that can take milliseconds (a checkpoint, moving the
//! search backlog into the index). The caller then makes the same write where
//! waiting is allowed.

use std::cell::Cell;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError, Weak};
use std::time::Duration;

use rusqlite::hooks::Wal;

use crate::db::backend::Conn;
use crate::error::{Error, Result};
use crate::store::Store;

/// Pages the log may hold before a writer copies them into the database file:
/// SQLite's own default.
pub const DEFAULT_CHECKPOINT_PAGES: u32 = 1_000;

/// The gate of one database file.
type Gate = Arc<Mutex<()>>;

/// The gates of the files this process has open, by canonical path.
static GATES: OnceLock<Mutex<HashMap<String, Weak<Mutex<()>>>>> = OnceLock::new();

thread_local! {
    /// The log's length in pages after this thread's last commit, from the hook.
    static LOG_PAGES: Cell<c_int> = const { Cell::new(0) };
    /// Whether this thread is inside [`Store::without_waiting`].
    static NOT_WAITING: Cell<bool> = const { Cell::new(false) };
}

/// How one connection writes: its file's gate, its checkpoint mark, and its busy
/// timeout.
pub(crate) struct Writer {
    gate: Gate,
    checkpoint_pages: u32,
    busy_timeout: Duration,
    /// A write that could not wait passed the mark: the next write that can copies
    /// the log.
    checkpoint_due: Cell<bool>,
}

impl Writer {
    /// The writer of `conn` on the database at `path`: the gate shared with every
    /// other store of this process on the same file (a private one for an
    /// in-memory database), and the hook that takes over checkpoints.
    pub(crate) fn new(conn: &Conn, path: &str, busy_timeout: Duration) -> Self {
        // PostgreSQL has its own locks and checkpoints: a private gate never waits.
        let gate = match conn {
            Conn::Sqlite(conn) => {
                conn.wal_hook(Some(note_log_pages));
                gate_for(path)
            }
            Conn::Postgres(_) => Gate::default(),
        };
        Self {
            gate,
            checkpoint_pages: DEFAULT_CHECKPOINT_PAGES,
            busy_timeout,
            checkpoint_due: Cell::new(false),
        }
    }

    /// Whether this is the only store of this process on its file: one gate is
    /// shared by them all, so its count is theirs.
    pub(crate) fn is_last_on_file(&self) -> bool {
        Arc::strong_count(&self.gate) == 1
    }

    pub(crate) fn set_checkpoint_pages(&mut self, pages: u32) {
        self.checkpoint_pages = pages;
    }

    /// Holds the gate until dropped: for a write of a single statement. Without
    /// waiting (see [`Store::without_waiting`]), a gate another connection holds
    /// fails the write at once.
    pub(crate) fn hold(&self) -> Result<MutexGuard<'_, ()>> {
        // A panic while the gate was held cannot leave a write half done (SQLite
        // rolls back what was not committed), so a poisoned gate is still good.
        if !NOT_WAITING.with(Cell::get) {
            return Ok(self.gate.lock().unwrap_or_else(PoisonError::into_inner));
        }
        match self.gate.try_lock() {
            Ok(gate) => Ok(gate),
            Err(TryLockError::Poisoned(poisoned)) => Ok(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => Err(would_wait("another write")),
        }
    }
}

// The signature is the one `Connection::wal_hook` takes.
#[allow(clippy::unnecessary_wraps)]
fn note_log_pages(_wal: &Wal, pages: c_int) -> rusqlite::Result<()> {
    LOG_PAGES.with(|log| log.set(pages));
    Ok(())
}

fn gate_for(path: &str) -> Gate {
    if path == ":memory:" || path.is_empty() {
        return Gate::default();
    }
    let key = std::fs::canonicalize(Path::new(path)).map_or_else(
        |_| path.to_string(),
        |full| full.to_string_lossy().into_owned(),
    );
    let mut gates = GATES
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(gate) = gates.get(&key).and_then(Weak::upgrade) {
        return gate;
    }
    // Files no store has open any more leave their entries behind; drop them here.
    gates.retain(|_, gate| gate.strong_count() > 0);
    let gate = Gate::default();
    gates.insert(key, Arc::downgrade(&gate));
    gate
}

/// The error that ends a write made without waiting where it would wait: it is
/// rolled back, and [`Store::without_waiting`] answers `None`.
fn would_wait(what: &str) -> Error {
    Error::Busy(format!("{what}: not done in a write that cannot wait"))
}

/// Fails a write made without waiting that is about to do `what`, work that can
/// take milliseconds; lets any other write go on.
pub(crate) fn refuse_slow_work_when_not_waiting(what: &str) -> Result<()> {
    if NOT_WAITING.with(Cell::get) {
        return Err(would_wait(what));
    }
    Ok(())
}

impl Store {
    /// Runs `work` (one write and what it reads) so that it never waits: the
    /// file's gate is only tried, SQLite's busy timeout is zero, and moving the
    /// search backlog or copying the log is left to a later write. Returns `None`,
    /// with nothing written, where `work` would have waited; the caller makes the
    /// write again where it may wait. Meant for a short write made on an event
    /// loop, which must never wait on another writer's lock.
    pub fn without_waiting<T>(
        &mut self,
        work: impl FnOnce(&mut Store) -> Result<T>,
    ) -> Result<Option<T>> {
        if self.writer.checkpoint_due.get() {
            return Ok(None);
        }
        self.conn.set_lock_wait(Duration::ZERO)?;
        NOT_WAITING.with(|flag| flag.set(true));
        // A panic must not leave the thread, or the connection, unable to wait.
        let outcome = crate::error::catch_panic(|| work(self));
        NOT_WAITING.with(|flag| flag.set(false));
        self.conn.set_lock_wait(self.writer.busy_timeout)?;
        match outcome {
            Ok(value) => Ok(Some(value)),
            Err(Error::Busy(_) | Error::Contention(_)) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

/// Times a write path runs again after the server rolled it back over a lock
/// conflict, before the conflict reaches its caller as [`Error::Busy`].
pub(crate) const CONTENTION_RETRIES: u32 = 8;

/// The longest pause before running a write path again, in milliseconds.
const MOST_BACKOFF_MS: u64 = 200;

/// Runs one write path as one transaction: `body` does its statements in the
/// transaction, which is committed when it returns. On PostgreSQL a session's
/// writes lock its row first (see [`Write::for_session`]) when `session_id` is
/// given. A transaction the server rolled back over a lock conflict (a deadlock,
/// a serialization failure) is run again from its start, after a pause that grows
/// and varies so that the same two writers do not meet again; `body` must hold all
/// its reads and checks for that to be safe, and change nothing outside the
/// database (caches are updated by the caller once this returns). A write that
/// cannot wait (see [`Store::without_waiting`]) is not run again: it gives up.
pub(crate) fn transact<T>(
    conn: &Conn,
    writer: &Writer,
    session_id: Option<&str>,
    body: impl FnMut(&Conn) -> Result<T>,
) -> Result<T> {
    let begin = || match session_id {
        Some(id) => Write::for_session(conn, writer, id),
        None => Write::begin(conn, writer),
    };
    run_again_on_contention(begin, body)
}

/// [`transact`] for the store's own bookkeeping (see [`Write::begin_bookkeeping`]).
pub(crate) fn transact_bookkeeping<T>(
    conn: &Conn,
    writer: &Writer,
    body: impl FnMut(&Conn) -> Result<T>,
) -> Result<T> {
    run_again_on_contention(|| Write::begin_bookkeeping(conn, writer), body)
}

/// The loop of [`transact`]: `begin` opens each attempt's transaction.
fn run_again_on_contention<'a, T>(
    begin: impl Fn() -> Result<Write<'a>>,
    mut body: impl FnMut(&Conn) -> Result<T>,
) -> Result<T> {
    let mut attempt = 0;
    loop {
        let outcome = (|| {
            let tx = begin()?;
            let value = body(&tx)?;
            tx.commit()?;
            Ok(value)
        })();
        match outcome {
            Err(Error::Contention(_))
                if attempt < CONTENTION_RETRIES && !NOT_WAITING.with(Cell::get) =>
            {
                attempt += 1;
                std::thread::sleep(backoff(attempt));
            }
            Err(Error::Contention(reason)) => {
                return Err(Error::Busy(format!(
                    "{reason}; still conflicting after {attempt} retries"
                )))
            }
            other => return other,
        }
    }
}

/// The pause before the `attempt`th retry: up to twice the last, from 2 ms up to
/// [`MOST_BACKOFF_MS`], at a random point of its upper half.
fn backoff(attempt: u32) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let ceiling = (1u64 << attempt.min(16)).min(MOST_BACKOFF_MS);
    // A fresh `RandomState` is seeded differently each time: the jitter's source.
    let random = std::collections::hash_map::RandomState::new()
        .build_hasher()
        .finish();
    let micros = ceiling * 1_000;
    Duration::from_micros(micros / 2 + random % (micros / 2 + 1))
}

/// A write transaction that holds its file's gate; rolled back when dropped
/// uncommitted.
pub(crate) struct Write<'a> {
    conn: &'a Conn,
    gate: Option<MutexGuard<'a, ()>>,
    writer: &'a Writer,
    open: bool,
}

impl<'a> Write<'a> {
    /// Takes the gate, then the database's write lock: `BEGIN IMMEDIATE` on SQLite,
    /// `BEGIN` on PostgreSQL (where rows lock as they are written). Without waiting
    /// (see [`Store::without_waiting`]), a gate another connection holds fails the
    /// write at once.
    pub(crate) fn begin(conn: &'a Conn, writer: &'a Writer) -> Result<Self> {
        Self::begin_as(conn, writer, "BEGIN")
    }

    /// [`Write::begin`] for the store's own bookkeeping (moving the search backlog
    /// into the index), which a read-only store on PostgreSQL does too: its
    /// connection's transactions are read-only by default, and this one says it
    /// writes (a replica refuses it, with an error the search passes over).
    pub(crate) fn begin_bookkeeping(conn: &'a Conn, writer: &'a Writer) -> Result<Self> {
        Self::begin_as(conn, writer, "BEGIN READ WRITE")
    }

    fn begin_as(conn: &'a Conn, writer: &'a Writer, postgres_begin: &str) -> Result<Self> {
        let gate = writer.hold()?;
        conn.batch(match conn {
            Conn::Sqlite(_) => "BEGIN IMMEDIATE",
            Conn::Postgres(_) => postgres_begin,
        })?;
        Ok(Self {
            conn,
            gate: Some(gate),
            writer,
            open: true,
        })
    }

    /// [`Write::begin`] for a write path of one session. On PostgreSQL the
    /// session's row is locked first: writes to one session take turns across
    /// every worker, so each check-then-write of the path (the next sequence
    /// number, sources still in the view) holds; writes to other sessions go on.
    /// SQLite's write lock already covers the whole file.
    pub(crate) fn for_session(
        conn: &'a Conn,
        writer: &'a Writer,
        session_id: &str,
    ) -> Result<Self> {
        let write = Self::begin(conn, writer)?;
        if let Conn::Postgres(_) = conn {
            write.query_opt(
                "SELECT 1 FROM sessions WHERE id = ?1 FOR UPDATE",
                crate::db::backend::args![session_id],
                |_| Ok(()),
            )?;
        }
        Ok(write)
    }

    /// Commits, opens the gate, then copies the log into the database file if it
    /// has grown past the mark (or a write that could not wait left it to this one).
    pub(crate) fn commit(mut self) -> Result<()> {
        LOG_PAGES.with(|log| log.set(0));
        self.conn.batch("COMMIT")?;
        self.open = false;
        self.gate = None;
        let Conn::Sqlite(conn) = self.conn else {
            return Ok(());
        };
        let writer = self.writer;
        let pages = LOG_PAGES.with(Cell::get);
        let past_mark = pages > 0 && pages as u32 >= writer.checkpoint_pages;
        if NOT_WAITING.with(Cell::get) {
            writer
                .checkpoint_due
                .set(writer.checkpoint_due.get() || past_mark);
        } else if past_mark || writer.checkpoint_due.get() {
            writer.checkpoint_due.set(false);
            // The write is committed whatever becomes of the copy; a copy that
            // cannot run now (another checkpoint is running) is done by a later one.
            let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        }
        Ok(())
    }
}

impl Drop for Write<'_> {
    fn drop(&mut self) {
        if self.open {
            // A failed commit, an error or a panic: nothing of the write stays. A
            // rollback that fails (the connection is gone) leaves nothing either.
            let _ = self.conn.batch("ROLLBACK");
        }
    }
}

impl std::ops::Deref for Write<'_> {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        self.conn
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_of_one_file_share_a_gate_however_its_path_is_spelled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        std::fs::write(&path, b"").unwrap();
        let plain = gate_for(path.to_str().unwrap());
        let roundabout = dir.path().join(".").join("shared.db");
        let again = gate_for(roundabout.to_str().unwrap());
        assert!(Arc::ptr_eq(&plain, &again));
        let other = dir.path().join("other.db");
        std::fs::write(&other, b"").unwrap();
        assert!(!Arc::ptr_eq(&plain, &gate_for(other.to_str().unwrap())));
    }

    #[test]
    fn each_in_memory_database_has_its_own_gate() {
        assert!(!Arc::ptr_eq(&gate_for(":memory:"), &gate_for(":memory:")));
    }

    /// The database file's size after three writes of 40 KB under `mark`.
    fn file_after_writes(mark: u32) -> u64 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.db");
        let conn = Conn::Sqlite(rusqlite::Connection::open(&path).unwrap());
        conn.query_row("PRAGMA journal_mode = WAL", &[], |_| Ok(()))
            .unwrap();
        let mut writer = Writer::new(&conn, path.to_str().unwrap(), Duration::from_secs(5));
        writer.set_checkpoint_pages(mark);
        conn.batch("CREATE TABLE t (x BLOB)").unwrap();
        for _ in 0..3 {
            let write = Write::begin(&conn, &writer).unwrap();
            write
                .execute("INSERT INTO t VALUES (zeroblob(40000))", &[])
                .unwrap();
            write.commit().unwrap();
        }
        std::fs::metadata(&path).unwrap().len()
    }

    fn sessions(store: &Store) -> i64 {
        store
            .conn
            .query_row("SELECT count(*) FROM sessions", &[], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn a_write_that_cannot_wait_gives_way_to_the_gate_and_to_a_due_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wait.db");
        let path = path.to_str().unwrap();
        let options = crate::store::OpenOptions::default();
        let mut store = Store::open(path, &options).unwrap();
        let other = Store::open(path, &options).unwrap();
        let create = |store: &mut Store| store.create_session("gpt-4o", "{}", None);
        {
            // A round committing on the other connection of the process.
            let _held = other.writer.hold().unwrap();
            assert!(store.without_waiting(create).unwrap().is_none());
        }
        assert_eq!(sessions(&store), 0);
        assert!(store.without_waiting(create).unwrap().is_some());
        let timeout: i64 = store
            .conn
            .query_row("PRAGMA busy_timeout", &[], |row| row.get(0))
            .unwrap();
        assert_eq!(timeout, 30_000, "the busy timeout is restored");
        // Past the mark, the copy is left to the next write that may wait, and
        // until it has run, no write is made without waiting.
        let session = create(&mut store).unwrap();
        let begin = |store: &mut Store| {
            store.begin_message(&session, crate::parts::Role::Assistant, None, "here:1:a")
        };
        store.set_checkpoint_pages(1);
        assert!(store.without_waiting(begin).unwrap().is_some());
        assert!(store.writer.checkpoint_due.get());
        assert!(store.without_waiting(begin).unwrap().is_none());
        begin(&mut store).unwrap();
        assert!(!store.writer.checkpoint_due.get());
        store.set_checkpoint_pages(DEFAULT_CHECKPOINT_PAGES);
        assert!(store.without_waiting(begin).unwrap().is_some());
        let messages: i64 = store
            .conn
            .query_row("SELECT count(*) FROM messages", &[], |row| row.get(0))
            .unwrap();
        assert_eq!(messages, 3);
    }

    #[test]
    fn a_write_that_loses_a_lock_conflict_runs_again_then_gives_up_as_busy() {
        let conn = Conn::Sqlite(rusqlite::Connection::open_in_memory().unwrap());
        let writer = Writer::new(&conn, ":memory:", Duration::from_secs(5));
        conn.batch("CREATE TABLE t (x INTEGER)").unwrap();
        let mut runs = 0;
        transact(&conn, &writer, None, |tx| {
            runs += 1;
            tx.execute("INSERT INTO t VALUES (1)", &[])?;
            if runs < 3 {
                return Err(Error::Contention("deadlock detected (40P01)".into()));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(runs, 3);
        let rows: i64 = conn
            .query_row("SELECT count(*) FROM t", &[], |row| row.get(0))
            .unwrap();
        assert_eq!(rows, 1, "the rolled back runs left nothing");
        let mut tries = 0;
        let spent = transact(&conn, &writer, None, |_| -> Result<()> {
            tries += 1;
            Err(Error::Contention(
                "could not serialize access (40001)".into(),
            ))
        });
        assert!(matches!(spent, Err(Error::Busy(_))), "{spent:?}");
        assert_eq!(tries, CONTENTION_RETRIES + 1);
    }

    #[test]
    fn slow_work_fails_only_a_write_that_cannot_wait() {
        assert!(refuse_slow_work_when_not_waiting("indexing").is_ok());
        NOT_WAITING.with(|flag| flag.set(true));
        let refused = refuse_slow_work_when_not_waiting("indexing");
        NOT_WAITING.with(|flag| flag.set(false));
        assert!(matches!(refused, Err(Error::Busy(_))));
    }

    #[test]
    fn a_write_past_the_mark_copies_the_log_into_the_file() {
        // Copied: the file holds the three rows. Under the mark (and with SQLite's
        // own automatic checkpoint replaced by the hook) they are still in the log.
        assert!(file_after_writes(4) > 120_000);
        assert!(file_after_writes(1_000_000) < 40_000);
    }
}
