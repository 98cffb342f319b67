//! Finding and reading back what was said: the full-text index and its backlog
//! (`index`, `tokenizer`, `pending`), grep on either backend (`grep`, `grep_pg`),
//! queries and languages (`query`, `lang`), the summary DAG and its walks (`dag`,
//! `dag_walk`), expanding a summary (`expand`, `window`) and reading a message
//! whole, in pages (`read`, `reading`).

pub(crate) mod dag;
pub(crate) mod dag_walk;
pub(crate) mod expand;
pub(crate) mod grep;
pub(crate) mod grep_pg;
pub(crate) mod index;
pub mod lang;
pub(crate) mod pending;
pub mod query;
pub(crate) mod read;
pub mod reading;
pub(crate) mod tokenizer;
pub mod window;
