//! Builds the bundled encodings' tables once, at compile time, so that a process
//! reads them in place instead of building them (see `src/table.rs`).

#![allow(dead_code)]

#[path = "src/scratch.rs"]
mod scratch;
#[path = "src/table.rs"]
mod table;
#[path = "src/vocab.rs"]
mod vocab;

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    for source in ["src/vocab.rs", "src/table.rs", "src/scratch.rs"] {
        println!("cargo:rerun-if-changed={source}");
    }
    if std::env::var_os("CARGO_FEATURE_EMBEDDED_DATA").is_none() {
        return;
    }
    let host_little = cfg!(target_endian = "little");
    let target_little = std::env::var("CARGO_CFG_TARGET_ENDIAN").as_deref() == Ok("little");
    assert_eq!(
        host_little, target_little,
        "toktok: prebuilt tables need host and target of one byte order"
    );
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    for name in ["cl100k", "o200k"] {
        let source = format!("data/{name}.vocab");
        println!("cargo:rerun-if-changed={source}");
        let raw = std::fs::read(&source).expect("the vocab files ship with the crate");
        let built = vocab::Vocab::from_bytes(&raw, &source).expect("the bundled vocab builds");
        let mut blob = Vec::new();
        built.write_prebuilt(&mut blob);
        std::fs::write(out.join(format!("{name}.tables")), blob).expect("OUT_DIR is writable");
    }
}
