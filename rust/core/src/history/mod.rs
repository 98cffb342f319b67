//! What was said, as the store keeps it: sessions, appending messages and their
//! parts, the tool lifecycle, streaming replies and their checkpoints, and the
//! tape of write events.

pub(crate) mod checkpoints;
pub(crate) mod events;
pub(crate) mod load;
pub(crate) mod media;
pub(crate) mod messages;
pub(crate) mod redaction;
pub(crate) mod sessions;
pub(crate) mod streams;
pub(crate) mod tools;
