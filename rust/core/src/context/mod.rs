//! The context a request is made of: the session's view and its cache (`view`),
//! choosing items for a budget (`selection`), rendering rows as chat messages
//! (`render`), the rules every provider's request meets (`request`), rendering
//! profiles for chat templates (`profile`) and how much of a request repeats the
//! previous one (`prefix`).

pub mod prefix;
pub mod profile;
pub mod render;
pub mod request;
pub(crate) mod selection;
pub(crate) mod view;
