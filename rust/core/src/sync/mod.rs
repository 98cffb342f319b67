//! Sync: a caller's whole history handed over every turn, of which only what is new
//! is stored. Each position of the history is kept as the digest of every message up
//! to it (`digest`), so one comparison tells whether a history extends what is
//! stored; the first position that differs is found only when one does not.

pub mod digest;
pub mod inputs;

pub use digest::{chain_next, chain_seed, CanonicalHasher, Digest, DIGEST_BYTES};
pub use inputs::{ForkPoint, SyncMatch};
