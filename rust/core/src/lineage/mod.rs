//! Lineage: what names a session for the outside world (keys), and sessions that
//! share a parent's history up to a message and go their own way from there (forks).

pub mod forks;
pub mod keys;
pub mod segments;

pub use forks::ForkInfo;
pub use segments::{Lineage, Segment};
