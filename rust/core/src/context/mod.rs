//! The context a request is made of: the session's view and its cache (`view`),
//! choosing items for a budget (`selection`), rendering rows as chat messages
//! (`render`), reasoning sent back within its tool loop (`replay`), the rules every provider's request meets (`request`), rendering
//! profiles for chat templates (`profile`), how much of a request repeats the
//! previous one (`prefix`) and which provider a session's requests go to
//! (`provider`).

pub mod prefix;
pub mod profile;
pub mod provider;
pub mod render;
pub(crate) mod replay;
pub mod request;
pub(crate) mod selection;
pub(crate) mod stand_in;
pub(crate) mod view;
