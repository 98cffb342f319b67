//! `lossless-core`: the append-only conversation store, token counting, context
//! assembly, compaction primitives and recall behind the `lossless` Python package.
//!
//! Everything here is synchronous and free of Python: the binding crate calls it
//! with the interpreter released.

pub mod arena;
pub mod compaction;
pub mod context;
pub mod db;
pub mod erasure;
pub mod error;
pub mod files;
pub mod formats;
pub mod history;
pub mod ids;
pub mod ledger;
pub mod lineage;
pub(crate) mod maps;
pub mod model;
pub mod parts;
pub mod recall;
pub mod redact;
pub mod store;
pub mod sync;
mod threads;
pub mod tokens;

// The paths these modules had before they joined their capability's column.
pub use compaction::{extractive, plan, summary_check};
pub use context::{prefix, profile, render, request};
pub use db::postgres as pg;
pub use files::{fileids, filescan};
pub use recall::{lang, query, reading, window};

pub use error::{Error, Result};
pub use store::{OpenOptions, Store};
