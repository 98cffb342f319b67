//! Large files kept outside the context: file ids and the footer that names them
//! (`fileids`), one streamed pass over a file (`filescan`), and the stored file
//! records (`records`).

pub mod fileids;
pub mod filescan;
pub(crate) mod records;
mod redacted_chunks;
