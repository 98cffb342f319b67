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

use std::cell::Cell;
use std::collections::HashMap;
use std::os::raw::c_int;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use rusqlite::hooks::Wal;
use rusqlite::{Connection, Transaction, TransactionBehavior};

use crate::error::Result;

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
}

/// How one connection writes: its file's gate and its checkpoint mark.
pub(super) struct Writer {
    gate: Gate,
    checkpoint_pages: u32,
}

impl Writer {
    /// The writer of `conn` on the database at `path`: the gate shared with every
    /// other store of this process on the same file (a private one for an
    /// in-memory database), and the hook that takes over checkpoints.
    pub(super) fn new(conn: &Connection, path: &str) -> Self {
        conn.wal_hook(Some(note_log_pages));
        Self {
            gate: gate_for(path),
            checkpoint_pages: DEFAULT_CHECKPOINT_PAGES,
        }
    }

    pub(super) fn set_checkpoint_pages(&mut self, pages: u32) {
        self.checkpoint_pages = pages;
    }

    /// Holds the gate until dropped: for a write of a single statement.
    pub(super) fn hold(&self) -> MutexGuard<'_, ()> {
        // A panic while the gate was held cannot leave a write half done (SQLite
        // rolls back what was not committed), so a poisoned gate is still good.
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
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

/// A write transaction that holds its file's gate.
pub(super) struct Write<'a> {
    // Declared first, so it is rolled back (when not committed) before the gate opens.
    tx: Transaction<'a>,
    gate: MutexGuard<'a, ()>,
    conn: &'a Connection,
    checkpoint_pages: u32,
}

impl<'a> Write<'a> {
    /// Takes the gate, then SQLite's write lock (`BEGIN IMMEDIATE`).
    pub(super) fn begin(conn: &'a mut Connection, writer: &'a Writer) -> Result<Self> {
        let gate = writer.hold();
        let conn: &'a Connection = conn;
        Ok(Self {
            tx: Transaction::new_unchecked(conn, TransactionBehavior::Immediate)?,
            gate,
            conn,
            checkpoint_pages: writer.checkpoint_pages,
        })
    }

    /// Commits, opens the gate, then copies the log into the database file if it
    /// has grown past the mark.
    pub(super) fn commit(self) -> Result<()> {
        let Self {
            tx,
            gate,
            conn,
            checkpoint_pages,
        } = self;
        LOG_PAGES.with(|log| log.set(0));
        tx.commit()?;
        drop(gate);
        let pages = LOG_PAGES.with(Cell::get);
        if pages > 0 && pages as u32 >= checkpoint_pages {
            // The write is committed whatever becomes of the copy; a copy that
            // cannot run now (another checkpoint is running) is done by a later one.
            let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        }
        Ok(())
    }
}

impl<'a> std::ops::Deref for Write<'a> {
    type Target = Transaction<'a>;

    fn deref(&self) -> &Self::Target {
        &self.tx
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
        let mut conn = Connection::open(&path).unwrap();
        conn.query_row("PRAGMA journal_mode = WAL", [], |_| Ok(()))
            .unwrap();
        let mut writer = Writer::new(&conn, path.to_str().unwrap());
        writer.set_checkpoint_pages(mark);
        conn.execute_batch("CREATE TABLE t (x BLOB)").unwrap();
        for _ in 0..3 {
            let write = Write::begin(&mut conn, &writer).unwrap();
            write
                .execute("INSERT INTO t VALUES (zeroblob(40000))", [])
                .unwrap();
            write.commit().unwrap();
        }
        std::fs::metadata(&path).unwrap().len()
    }

    #[test]
    fn a_write_past_the_mark_copies_the_log_into_the_file() {
        // Copied: the file holds the three rows. Under the mark (and with SQLite's
        // own automatic checkpoint replaced by the hook) they are still in the log.
        assert!(file_after_writes(4) > 120_000);
        assert!(file_after_writes(1_000_000) < 40_000);
    }
}
