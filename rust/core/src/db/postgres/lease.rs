//! The compaction lease as a database lock: one compaction round per session at a
//! time across every worker on every host.
//!
//! The lease is a session-level advisory lock, keyed by the session's id, held by
//! the connection that runs the round. Unlike SQLite's lease row it needs no expiry:
//! the server releases it when that connection ends, so a worker killed mid-round
//! frees its sessions at once, and a slow round is never taken over while it still
//! runs. It needs a connection of its own for the length of a round (a pooler in
//! transaction mode would hand the lock to whoever gets the connection next).

use postgres::Client;
use sha2::{Digest, Sha256};

use super::connect::from_postgres;
use crate::error::Result;

/// What the keys of compaction leases are derived under, so that they do not meet
/// the locks of other uses of the same database by chance.
const NAMESPACE: &[u8] = b"lossless compaction lease\0";

/// The advisory lock key of `session_id`'s lease: the first 8 bytes of a SHA-256,
/// the same on every host and every server version (PostgreSQL's own `hashtext` is
/// neither promised). Two sessions share a key with odds of one in 2^64.
#[must_use]
pub fn lease_key(session_id: &str) -> i64 {
    let digest = Sha256::new()
        .chain_update(NAMESPACE)
        .chain_update(session_id.as_bytes())
        .finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(first)
}

/// Takes `session_id`'s compaction lease on this connection unless another
/// connection holds it; never waits. Taking it again on the holding connection
/// succeeds (and must be given back as many times).
pub fn try_acquire(client: &mut Client, session_id: &str) -> Result<bool> {
    let taken: bool = client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&lease_key(session_id)])
        .map_err(|err| from_postgres(&err))?
        .get(0);
    Ok(taken)
}

/// Gives back `session_id`'s lease held by this connection; false if it held none.
pub fn release(client: &mut Client, session_id: &str) -> Result<bool> {
    let released: bool = client
        .query_one("SELECT pg_advisory_unlock($1)", &[&lease_key(session_id)])
        .map_err(|err| from_postgres(&err))?
        .get(0);
    Ok(released)
}

/// Whether any connection holds `session_id`'s lease now.
pub fn is_held(client: &mut Client, session_id: &str) -> Result<bool> {
    lease_granted(
        client,
        session_id,
        "database = (SELECT oid FROM pg_database WHERE datname = current_database())",
    )
}

/// Whether this connection holds `session_id`'s lease: false once the server has
/// let it go, which only the end of the connection does.
pub fn held_here(client: &mut Client, session_id: &str) -> Result<bool> {
    lease_granted(client, session_id, "pid = pg_backend_pid()")
}

/// Whether a granted advisory lock on `session_id`'s lease key matches `holder`, a
/// condition on `pg_locks`. An advisory lock on one bigint shows its high half as
/// `classid`, its low half as `objid`, and `objsubid` 1.
fn lease_granted(client: &mut Client, session_id: &str, holder: &str) -> Result<bool> {
    let sql = format!(
        "SELECT EXISTS (SELECT 1 FROM pg_locks
          WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND {holder}
            AND classid::bigint = ($1::bigint >> 32) & 4294967295
            AND objid::bigint = $1::bigint & 4294967295)"
    );
    let held: bool = client
        .query_one(&sql, &[&lease_key(session_id)])
        .map_err(|err| from_postgres(&err))?
        .get(0);
    Ok(held)
}
