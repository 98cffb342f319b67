//! The compaction lease: one round per session at a time, across processes.
//!
//! On SQLite it is a row with an expiry, renewed while a round runs: a holder that
//! dies lets it lapse. On PostgreSQL it is the session's advisory lock
//! (`pg::lease`), held by this store's connection, the one that runs the round's
//! writes: the server lets it go the moment that connection ends, so a worker
//! killed mid-round frees the session at once, and a live holder never loses it to
//! a clock. The lifetime argument is the row's alone.

use crate::db::backend::{args, Conn};
use crate::error::Result;
use crate::ids::now_ms;
use crate::pg::lease;
use crate::store::Store;

impl Store {
    /// Takes the session's compaction lease for `holder` unless another holder has
    /// it (on SQLite: an unexpired one). Taking it again as its holder renews it.
    pub fn acquire_compaction_lease(
        &mut self,
        session_id: &str,
        holder: &str,
        ttl_ms: i64,
    ) -> Result<bool> {
        self.session(session_id)?;
        if let Conn::Postgres(conn) = &self.conn {
            if let Some(current) = self.leases.get(session_id) {
                // Held on this connection: by this holder while the connection
                // lives (a lost connection fails the query), or by another.
                return Ok(current == holder
                    && lease::held_here(&mut conn.client(), session_id)
                        .map_err(|err| crate::pg::named(err, conn.url()))?);
            }
            let taken = lease::try_acquire(&mut conn.client(), session_id)
                .map_err(|err| crate::pg::named(err, conn.url()))?;
            if taken {
                self.leases
                    .insert(session_id.to_string(), holder.to_string());
            }
            return Ok(taken);
        }
        let now = now_ms();
        let _gate = self.writer.hold()?;
        let changed = self
            .conn
            .prepare_cached(
                "INSERT INTO compaction_leases (session_id, holder, expires_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
                 WHERE compaction_leases.expires_at < ?4 OR compaction_leases.holder = excluded.holder",
            )?
            .execute(args![session_id, holder, now + ttl_ms, now])?;
        Ok(changed == 1)
    }

    /// Gives the lease back, if `holder` has it.
    pub fn release_compaction_lease(&mut self, session_id: &str, holder: &str) -> Result<()> {
        if let Conn::Postgres(conn) = &self.conn {
            if self.leases.get(session_id).is_some_and(|h| h == holder) {
                self.leases.remove(session_id);
                lease::release(&mut conn.client(), session_id)
                    .map_err(|err| crate::pg::named(err, conn.url()))?;
            }
            return Ok(());
        }
        let _gate = self.writer.hold()?;
        self.conn
            .prepare_cached("DELETE FROM compaction_leases WHERE session_id = ?1 AND holder = ?2")?
            .execute(args![session_id, holder])?;
        Ok(())
    }
}
