//! Compaction: a round's rules (`plan`), pruning tool outputs (`prune`), choosing
//! the span (`span`), summary rows and deterministic summaries (`summaries`),
//! condensing summaries without a model (`condense`),
//! committing a summary and its DAG edges (`commit`), a round's leaves (`round`),
//! what a request leaves out (`left_out`),
//! the built-in extractive summariser (`extractive`) and its commit
//! (`extractive_commit`), model summaries checked against it (`summary_check`),
//! and the per-session compaction lease (`lease`).

pub(crate) mod commit;
pub(crate) mod condense;
pub mod extractive;
pub(crate) mod extractive_commit;
pub(crate) mod lease;
pub(crate) mod left_out;
pub mod plan;
pub(crate) mod prune;
pub(crate) mod round;
pub(crate) mod span;
pub(crate) mod summaries;
pub mod summary_check;
