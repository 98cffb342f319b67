//! The SQLite library the store links is built as decision 31 says: without the
//! global memory accounting that makes two connections reading at once wait on
//! each other's allocations (`.cargo/config.toml` sets the flags).

use rusqlite::Connection;

fn compile_options() -> Vec<String> {
    let conn = Connection::open_in_memory().expect("an in-memory database");
    let mut stmt = conn
        .prepare("SELECT compile_options FROM pragma_compile_options")
        .expect("the compile options query");
    stmt.query_map([], |row| row.get(0))
        .expect("the compile options")
        .collect::<Result<_, _>>()
        .expect("every compile option")
}

#[test]
fn sqlite_counts_no_memory_globally() {
    let options = compile_options();
    assert!(
        options.iter().any(|option| option == "DEFAULT_MEMSTATUS=0"),
        "allocation statistics are on: {options:?}"
    );
    assert!(
        !options
            .iter()
            .any(|option| option == "ENABLE_MEMORY_MANAGEMENT"),
        "page caches share one group: {options:?}"
    );
}
