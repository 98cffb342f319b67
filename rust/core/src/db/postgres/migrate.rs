//! Creating, upgrading and checking the schema of a PostgreSQL database.

use postgres::{Client, Transaction};

use super::connect::error_at;
use super::schema::{self, SCHEMA_VERSION};
use crate::error::{Error, Result};

/// The advisory lock that migrations hold around their transaction, so that many
/// workers starting together create the schema once: the others wait, then find it.
/// The number is arbitrary; it only has to differ from the keys of `lease.rs`.
pub const MIGRATION_LOCK: i64 = 0x6c6f_7373_6c65_7373; // "lossless"

/// Migrations from each older PostgreSQL schema version, in order: `(from, sql)`.
/// The PostgreSQL backend starts at version 8; a release that changes the SQLite
/// schema adds its step here under the same version number.
fn steps() -> [(i64, String); 7] {
    [
        // Version 9: what an arena entry's text counted before it was cut at write time.
        (
            8,
            "ALTER TABLE arena_entries ADD COLUMN full_tokens BIGINT;".to_string(),
        ),
        // Version 10: the reasoning kind. The constraint is made again from the kinds
        // this build declares; the stored rows all meet it, as it only allows more.
        (9, widened_kind_check()),
        // Version 11: the media kind and the bytes of images and documents.
        (
            10,
            format!(
                "{}
                 {}{}",
                widened_kind_check(),
                schema::MEDIA,
                schema::append_only_triggers("media", None)
            ),
        ),
        // Version 12: the provider_compaction kind, the same way, and the index
        // that finds its parts.
        (
            11,
            format!(
                "{}
                 CREATE INDEX IF NOT EXISTS parts_provider_compaction
                     ON parts (session_id, msg_seq, ord)
                     WHERE kind = 'provider_compaction';",
                widened_kind_check()
            ),
        ),
        // Version 13: session names, forks and handed-over histories.
        (12, lineage_step()),
        (13, governance_step()),
        // Version 15: the session ledger.
        (14, ledger_step()),
    ]
}

/// The version 13 tables and their append-only triggers.
fn lineage_step() -> String {
    let mut sql = schema::LINEAGE.to_string();
    for table in ["session_keys", "session_forks", "sync_inputs"] {
        sql.push_str(&schema::append_only_triggers(table, None));
    }
    sql
}

/// The statement that makes the kind constraint again from the kinds this build
/// declares (a later step's list holds an earlier one's).
/// Version 14: erasure receipts, subjects and retention rules, and the trigger
/// function that lets an erasure's deletes through.
fn governance_step() -> String {
    format!(
        "{}{}{}{}",
        schema::REFUSE,
        schema::GOVERNANCE,
        schema::governance_triggers(),
        schema::tenant_columns()
    )
}

/// Version 15: the session ledger, its append-only triggers and tenant columns.
fn ledger_step() -> String {
    format!(
        "{}{}{}",
        schema::LEDGER,
        schema::append_only_triggers("ledger_items", None),
        schema::tenant_columns()
    )
}

fn widened_kind_check() -> String {
    format!(
        "ALTER TABLE parts DROP CONSTRAINT parts_kind_check,
         ADD CONSTRAINT parts_kind_check CHECK (kind IN ({}));",
        crate::parts::kind_check()
    )
}

/// The first schema version the PostgreSQL backend wrote: a lower one was never
/// written by lossless.
const FIRST_VERSION: i64 = 8;

/// Creates the schema in an empty database, upgrades an older one in one
/// transaction, accepts the current one, and refuses one written by a newer build
/// or a database that holds another application's tables. Returns the version the
/// database has now. `shown` names the database in errors (its URL, redacted).
pub fn migrate(client: &mut Client, shown: &str) -> Result<i64> {
    let named = |err: postgres::Error| error_at(&err, shown);
    let found = stored_version(client).map_err(named)?;
    if found == Some(SCHEMA_VERSION) {
        return Ok(SCHEMA_VERSION);
    }
    check_not_newer(found, shown)?;
    // The lock is taken before the transaction begins: a transaction that began
    // before another worker committed the schema may still resolve table names
    // from its stale catalog cache and miss the tables that worker created.
    client
        .execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])
        .map_err(named)?;
    let migrated = migrate_locked(client, shown);
    let unlocked = client
        .execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK])
        .map_err(named);
    let version = migrated?;
    unlocked?;
    Ok(version)
}

/// Creates or upgrades the schema while this connection holds the migration lock.
fn migrate_locked(client: &mut Client, shown: &str) -> Result<i64> {
    let named = |err: postgres::Error| error_at(&err, shown);
    let mut tx = client.transaction().map_err(named)?;
    // Another worker may have created or upgraded the schema while this one waited.
    let again = stored_version_in(&mut tx).map_err(named)?;
    check_not_newer(again, shown)?;
    match again {
        None => create(&mut tx, shown)?,
        Some(version) if version < FIRST_VERSION => {
            return Err(Error::Corrupt {
                path: shown.to_string(),
                reason: format!("schema version {version} was never written by lossless"),
            })
        }
        Some(version) => upgrade(&mut tx, version).map_err(named)?,
    }
    tx.commit().map_err(named)?;
    Ok(SCHEMA_VERSION)
}

/// The stored schema version: `None` when the database has no lossless schema.
pub fn stored_version(client: &mut Client) -> std::result::Result<Option<i64>, postgres::Error> {
    let mut tx = client.transaction()?;
    let version = stored_version_in(&mut tx)?;
    tx.commit()?;
    Ok(version)
}

fn stored_version_in(
    tx: &mut Transaction<'_>,
) -> std::result::Result<Option<i64>, postgres::Error> {
    // Read from pg_class under the statement's snapshot: `to_regclass` answers from
    // the connection's catalog cache, which may not yet know a table that another
    // connection has just committed.
    let exists: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relname = 'lossless_schema')",
            &[],
        )?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let row = tx.query_opt("SELECT version FROM lossless_schema", &[])?;
    Ok(Some(row.map_or(0, |row| row.get(0))))
}

fn check_not_newer(found: Option<i64>, shown: &str) -> Result<()> {
    match found {
        Some(version) if version > SCHEMA_VERSION => Err(Error::SchemaTooNew {
            path: shown.to_string(),
            found: version,
            supported: SCHEMA_VERSION,
        }),
        _ => Ok(()),
    }
}

/// Creates every table, index and trigger in an empty schema; refuses a schema that
/// holds another application's tables.
fn create(tx: &mut Transaction<'_>, shown: &str) -> Result<()> {
    let named = |err: postgres::Error| error_at(&err, shown);
    let foreign: i64 = tx
        .query_one(
            "SELECT count(*) FROM pg_catalog.pg_class c
             JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            &[],
        )
        .map_err(named)?
        .get(0);
    if foreign > 0 {
        return Err(Error::NotADatabase {
            path: shown.to_string(),
            reason: "it is a PostgreSQL database of another application".into(),
        });
    }
    for step in [
        schema::META,
        schema::REFUSE,
        &schema::tables(),
        schema::FILES_AND_MAPS,
        schema::SEARCH,
        schema::INDEXES,
        schema::MEDIA,
        schema::LINEAGE,
        schema::GOVERNANCE,
        schema::LEDGER,
        &schema::triggers(),
        &schema::governance_triggers(),
        &schema::tenant_columns(),
    ] {
        tx.batch_execute(step).map_err(named)?;
    }
    tx.execute(
        "INSERT INTO lossless_schema (version) VALUES ($1)",
        &[&SCHEMA_VERSION],
    )
    .map_err(named)?;
    Ok(())
}

/// Runs every step from `version` on and records the new version.
fn upgrade(tx: &mut Transaction<'_>, version: i64) -> std::result::Result<(), postgres::Error> {
    for (from, sql) in steps() {
        if from >= version {
            tx.batch_execute(&sql)?;
        }
    }
    tx.execute(
        "UPDATE lossless_schema SET version = $1",
        &[&SCHEMA_VERSION],
    )?;
    Ok(())
}
