//! The bundled encodings, embedded in the binary.
//!
//! `Tokenizer::builtin("cl100k_base")` needs no data directory, no download and
//! no network — the vocab, special-token and Unicode-class tables are compiled
//! in (about 4 MB of `.rodata`, shared across every process that loads them).
//!
//! Turn the `embedded-data` feature off to drop them and load from a directory
//! with [`Tokenizer::load_dir`] instead.

/// Names of the encodings this build can construct with [`Tokenizer::builtin`].
///
/// [`Tokenizer::builtin`]: crate::Tokenizer::builtin
pub const BUILTIN_ENCODINGS: &[&str] = &["cl100k_base", "o200k_base", "o200k_harmony"];

#[cfg(feature = "embedded-data")]
pub(crate) mod data {
    /// 8-byte aligned bytes, so that tables of `u64` can be read from them in place.
    #[repr(C, align(8))]
    pub struct Aligned<B: ?Sized>(pub B);

    // Built from data/*.vocab by the build script (see `Vocab::write_prebuilt`).
    pub static CL100K_TABLES: &Aligned<[u8]> =
        &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/cl100k.tables")));
    pub static O200K_TABLES: &Aligned<[u8]> =
        &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/o200k.tables")));
    pub const CL100K_SPECIAL: &[u8] = include_bytes!("../data/cl100k.special");
    pub const O200K_SPECIAL: &[u8] = include_bytes!("../data/o200k.special");
    pub const O200K_HARMONY_SPECIAL: &[u8] = include_bytes!("../data/o200k_harmony.special");
    pub const UNICLASS: &[u8] = include_bytes!("../data/uniclass.bin");
    pub const UNICLASS_O200K: &[u8] = include_bytes!("../data/uniclass_o200k.bin");
}
