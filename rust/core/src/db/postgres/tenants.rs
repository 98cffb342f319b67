//! Tenants: row-level security over every tenant table, turned on once per
//! database by its owner.
//!
//! Each row carries its tenant (the connection's `lossless.tenant`, set in the
//! URL's `options`, by default). With security on, a connection reads, writes and
//! deletes only its own tenant's rows, whatever its queries say: the policy is the
//! server's, not the library's. `FORCE` makes it hold for the tables' owner too;
//! only a superuser or a role with `BYPASSRLS` passes it.

use std::fmt::Write as _;

use super::connect::error_at;
use super::schema::TENANT_TABLES;
use crate::error::Result;

/// Turns row-level security on for every tenant table of the database `client`
/// is connected to (again: nothing changes).
pub fn enable(client: &mut postgres::Client, shown: &str) -> Result<()> {
    let mut sql = String::from("BEGIN;\n");
    for table in TENANT_TABLES {
        let _ = writeln!(
            sql,
            "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
             ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
             DROP POLICY IF EXISTS lossless_tenant ON {table};
             CREATE POLICY lossless_tenant ON {table}
                 USING (tenant = lossless_tenant()) WITH CHECK (tenant = lossless_tenant());"
        );
    }
    sql.push_str("COMMIT;");
    client
        .batch_execute(&sql)
        .map_err(|err| error_at(&err, shown))
}

/// Whether row-level security is on for the tenant tables.
pub fn enabled(client: &mut postgres::Client, shown: &str) -> Result<bool> {
    let row = client
        .query_one(
            "SELECT relrowsecurity AND relforcerowsecurity FROM pg_catalog.pg_class
             WHERE oid = 'sessions'::regclass",
            &[],
        )
        .map_err(|err| error_at(&err, shown))?;
    Ok(row.get(0))
}
