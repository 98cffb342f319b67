//! The PostgreSQL backend's groundwork: URLs, connections and their errors, the
//! schema and its migrations, the compaction lease as a database lock, and the
//! full-text terms. The store's queries run on it once the store is generic over
//! its backend (see docs/POSTGRES.md).
//!
//! The client is the synchronous `postgres` crate: calls block the calling thread,
//! which the Python binding runs with the interpreter released, as it does SQLite's.

mod connect;
pub mod fts;
pub mod lease;
mod migrate;
pub mod schema;
pub mod tenants;
pub mod tls;
pub mod url;

pub use connect::{connect, error_at, from_postgres, named};
pub use migrate::{migrate, stored_version, MIGRATION_LOCK};
pub use url::{is_postgres_url, redact};

use crate::error::Result;

/// A connection to a lossless database on a PostgreSQL server, its schema created
/// or upgraded.
pub struct Database {
    client: postgres::Client,
    shown: String,
}

impl Database {
    /// Connects to `url` and brings its schema to this build's version (see
    /// [`migrate`]). Errors name the URL without its password.
    pub fn open(url: &str) -> Result<Self> {
        let shown = redact(url);
        if !is_postgres_url(url) {
            return Err(crate::Error::invalid(
                "db",
                format!("{shown}: expected a postgresql:// URL"),
            ));
        }
        let mut client = connect(url)?;
        migrate(&mut client, &shown)?;
        Ok(Self { client, shown })
    }

    /// Turns row-level security by tenant on for this database (see `tenants`).
    pub fn enable_tenants(&mut self) -> Result<()> {
        tenants::enable(&mut self.client, &self.shown)
    }

    /// The URL of the database, without its password.
    #[must_use]
    pub fn url(&self) -> &str {
        &self.shown
    }

    /// The connection, for the queries of the store.
    pub fn client(&mut self) -> &mut postgres::Client {
        &mut self.client
    }
}
