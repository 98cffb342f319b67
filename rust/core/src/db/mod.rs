//! The database under the store: the connection over either driver and its
//! values (`backend`), the PostgreSQL server's own groundwork (`postgres`), the one-writer gate and transactions (`gate`), the SQLite
//! schema and its migrations (`schema`, with the kind constraint widened in place
//! by `kind_check`), what a file holds before anything is written (`check`), and
//! the id-list column (`id_list`), and the key of an encrypted SQLite file
//! (`cipher`).

pub(crate) mod backend;
pub(crate) mod check;
pub mod cipher;
pub(crate) mod gate;
pub(crate) mod id_list;
pub(crate) mod kind_check;
pub mod postgres;
pub mod schema;
