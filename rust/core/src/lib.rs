//! `lossless-core`: the append-only conversation store, token counting, context
//! assembly, compaction primitives and recall behind the `lossless` Python package.
//!
//! Everything here is synchronous and free of Python: the binding crate calls it
//! with the interpreter released.

pub mod arena;
pub mod error;
pub mod extractive;
pub mod fileids;
pub mod filescan;
pub mod ids;
pub mod lang;
pub mod model;
pub mod parts;
pub mod pg;
pub mod plan;
pub mod prefix;
pub mod profile;
pub mod query;
pub mod reading;
pub mod render;
pub mod request;
pub mod store;
pub mod summary_check;
mod threads;
pub mod tokens;
pub mod window;

pub use error::{Error, Result};
pub use store::{OpenOptions, Store};
