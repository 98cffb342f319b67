//! The index's FTS5 tokenizer, `lossless`, registered on every connection a
//! store opens (see `crate::lang` for what it does to words).
//!
//! A document is split into words ([`segment::words`]), its language detected,
//! and each word indexed in the form [`lang::index_form`] gives it in that
//! language. A query's words arrive stemmed already (the query expands each
//! word into its form in every language the index holds: `crate::query`), so
//! the tokenizer only splits and folds them. Snippets tokenize the document
//! again, the same way, so highlights fall on the original words.
//!
//! The languages it indexes are noted on the connection and saved with the
//! index rows by `lossless_new_languages()` (see `recall/index.rs`), so a query knows
//! which languages to stem its words in.
//!
//! FTS5 takes tokenizers only through its C interface: this module is the
//! crate's one use of `unsafe`, each block stating what it relies on.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rusqlite::functions::FunctionFlags;
use rusqlite::{ffi, Connection};

use crate::error::{Error, Result};
use crate::lang::segment::{words, WordKind};
use crate::lang::{self, Language, LanguageSet};

/// Languages a connection's tokenizer has indexed documents in.
#[derive(Debug, Default)]
pub struct Seen {
    /// Not yet saved in `search_languages` (taken by `lossless_new_languages()`).
    unsaved: AtomicU32,
    /// Every language indexed on this connection, saved or not (a read-only
    /// store's temporary index is never saved).
    ever: AtomicU32,
}

impl Seen {
    fn mark(&self, lang: Language) {
        self.unsaved.fetch_or(lang.bit(), Ordering::Relaxed);
        self.ever.fetch_or(lang.bit(), Ordering::Relaxed);
    }

    /// Every language this connection indexed a document in.
    pub fn ever(&self) -> LanguageSet {
        LanguageSet(self.ever.load(Ordering::Relaxed))
    }

    /// The codes of the languages indexed since the last call, as a JSON array.
    fn take_unsaved(&self) -> String {
        let set = LanguageSet(self.unsaved.swap(0, Ordering::Relaxed));
        let codes: Vec<&str> = lang::Language::ALL
            .into_iter()
            .filter(|lang| set.contains(*lang))
            .map(Language::code)
            .collect();
        serde_json::to_string(&codes).unwrap_or_else(|_| "[]".into())
    }
}

/// Registers the tokenizer and `lossless_new_languages()` on `conn`.
pub fn register(conn: &Connection) -> Result<Arc<Seen>> {
    let seen = Arc::new(Seen::default());
    let noted = Arc::clone(&seen);
    conn.create_scalar_function(
        "lossless_new_languages",
        0,
        FunctionFlags::SQLITE_UTF8,
        move |_| Ok(noted.take_unsaved()),
    )?;
    let api = fts5_api(conn)?;
    let mut tokenizer = ffi::fts5_tokenizer {
        xCreate: Some(create),
        xDelete: Some(delete),
        xTokenize: Some(tokenize),
    };
    let user_data = Box::into_raw(Box::new(Arc::clone(&seen))).cast::<c_void>();
    // The name tables give as `tokenize = 'lossless'`.
    let name = c"lossless";
    // SAFETY: `api` is the connection's live fts5_api (checked non-null); FTS5
    // copies `tokenizer` and owns `user_data` from here, freeing it through
    // `destroy` when the connection closes or the name is registered again.
    let rc = unsafe {
        let create_tokenizer = (*api).xCreateTokenizer.ok_or_else(no_fts5)?;
        create_tokenizer(
            api,
            name.as_ptr(),
            user_data,
            &raw mut tokenizer,
            Some(destroy),
        )
    };
    if rc != ffi::SQLITE_OK {
        // SAFETY: FTS5 did not take the pointer: it is still ours to free.
        drop(unsafe { Box::from_raw(user_data.cast::<Arc<Seen>>()) });
        return Err(Error::from(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some("registering the lossless tokenizer".into()),
        )));
    }
    Ok(seen)
}

fn no_fts5() -> Error {
    Error::from(rusqlite::Error::SqliteFailure(
        ffi::Error::new(ffi::SQLITE_ERROR),
        Some("this SQLite has no FTS5".into()),
    ))
}

/// The connection's `fts5_api`, which FTS5 hands out as a pointer bound to
/// `SELECT fts5(?1)`.
fn fts5_api(conn: &Connection) -> Result<*mut ffi::fts5_api> {
    let mut api: *mut ffi::fts5_api = ptr::null_mut();
    // SAFETY: the handle is live while `conn` is borrowed; the statement is
    // finalized before returning, and `api` outlives it.
    let rc = unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &raw mut stmt,
            ptr::null_mut(),
        );
        if rc == ffi::SQLITE_OK {
            ffi::sqlite3_bind_pointer(
                stmt,
                1,
                (&raw mut api).cast::<c_void>(),
                c"fts5_api_ptr".as_ptr(),
                None,
            );
            ffi::sqlite3_step(stmt);
        }
        ffi::sqlite3_finalize(stmt);
        rc
    };
    if rc != ffi::SQLITE_OK {
        return Err(Error::from(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            None,
        )));
    }
    if api.is_null() {
        return Err(no_fts5());
    }
    Ok(api)
}

/// One tokenizer instance (per FTS5 table): the connection's languages.
struct Instance {
    seen: Arc<Seen>,
}

unsafe extern "C" fn create(
    user_data: *mut c_void,
    _args: *mut *const c_char,
    _n_args: c_int,
    out: *mut *mut ffi::Fts5Tokenizer,
) -> c_int {
    // SAFETY: `user_data` is the `Arc<Seen>` boxed in `register`, alive until
    // `destroy`; `out` is FTS5's slot for the new instance.
    unsafe {
        let seen = Arc::clone(&*user_data.cast::<Arc<Seen>>());
        *out = Box::into_raw(Box::new(Instance { seen })).cast::<ffi::Fts5Tokenizer>();
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn delete(instance: *mut ffi::Fts5Tokenizer) {
    // SAFETY: `instance` came from `create`, and FTS5 deletes it once.
    drop(unsafe { Box::from_raw(instance.cast::<Instance>()) });
}

unsafe extern "C" fn destroy(user_data: *mut c_void) {
    // SAFETY: `user_data` came from `register`, and FTS5 destroys it once.
    drop(unsafe { Box::from_raw(user_data.cast::<Arc<Seen>>()) });
}

type TokenCallback =
    unsafe extern "C" fn(*mut c_void, c_int, *const c_char, c_int, c_int, c_int) -> c_int;

unsafe extern "C" fn tokenize(
    instance: *mut ffi::Fts5Tokenizer,
    ctx: *mut c_void,
    flags: c_int,
    text: *const c_char,
    n_text: c_int,
    token: Option<TokenCallback>,
) -> c_int {
    let Some(token) = token else {
        return ffi::SQLITE_ERROR;
    };
    if text.is_null() || n_text <= 0 {
        return ffi::SQLITE_OK;
    }
    // SAFETY: FTS5 passes `n_text` readable bytes at `text` for this call, and
    // the instance made by `create`.
    let (bytes, instance) = unsafe {
        (
            std::slice::from_raw_parts(text.cast::<u8>(), n_text as usize),
            &*instance.cast::<Instance>(),
        )
    };
    let query = flags & ffi::FTS5_TOKENIZE_QUERY != 0;
    let emit = |word: &str, start: usize, end: usize| -> c_int {
        // SAFETY: `token` and `ctx` are FTS5's for this call; the word is read
        // before the callback returns.
        unsafe {
            token(
                ctx,
                0,
                word.as_ptr().cast::<c_char>(),
                word.len() as c_int,
                start as c_int,
                end as c_int,
            )
        }
    };
    // A panic must not unwind into SQLite: it fails the statement instead.
    catch_unwind(AssertUnwindSafe(|| {
        tokenize_bytes(bytes, query, &instance.seen, emit)
    }))
    .unwrap_or(ffi::SQLITE_ERROR)
}

/// Emits the index terms of `bytes` (valid UTF-8 stretches of it: anything else
/// separates words), stopping at the first callback that does not return OK.
fn tokenize_bytes(
    bytes: &[u8],
    query: bool,
    seen: &Seen,
    mut emit: impl FnMut(&str, usize, usize) -> c_int,
) -> c_int {
    let lang = if query {
        Language::English
    } else {
        let sample = &bytes[..bytes.len().min(lang::SAMPLE_BYTES)];
        let lang = lang::detect(&String::from_utf8_lossy(sample));
        seen.mark(lang);
        lang
    };
    let mut offset = 0;
    for chunk in bytes.utf8_chunks() {
        let valid = chunk.valid();
        for word in words(valid) {
            let term = match (word.kind, query) {
                (WordKind::Pair, _) => lang::lowercase(word.text).into_owned(),
                (WordKind::Word, true) => lang::fold(&lang::lowercase(word.text)).into_owned(),
                (WordKind::Word, false) => lang::index_form(word.text, lang),
            };
            if term.is_empty() {
                // Only combining marks, which folding drops.
                continue;
            }
            let rc = emit(&term, offset + word.start, offset + word.end);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        offset += valid.len() + chunk.invalid().len();
    }
    ffi::SQLITE_OK
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_bytes_give_terms_within_the_text(bytes in proptest::collection::vec(any::<u8>(), 0..200), query: bool) {
            let seen = Seen::default();
            let mut spans = Vec::new();
            let rc = tokenize_bytes(&bytes, query, &seen, |term, start, end| {
                spans.push((term.is_empty(), start, end));
                ffi::SQLITE_OK
            });
            prop_assert_eq!(rc, ffi::SQLITE_OK);
            for (empty, start, end) in spans {
                prop_assert!(!empty && start < end && end <= bytes.len());
            }
        }
    }

    fn terms(text: &str, query: bool) -> Vec<(String, usize, usize)> {
        let mut out = Vec::new();
        let seen = Seen::default();
        tokenize_bytes(text.as_bytes(), query, &seen, |term, start, end| {
            out.push((term.to_string(), start, end));
            ffi::SQLITE_OK
        });
        out
    }

    #[test]
    fn documents_are_stemmed_and_queries_only_folded() {
        let doc = terms("The keys were Rotated", false);
        let words: Vec<&str> = doc.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(words, ["the", "key", "were", "rotat"]);
        assert_eq!((doc[3].1, doc[3].2), (14, 21));
        let query = terms("Rotated Café", true);
        let words: Vec<&str> = query.iter().map(|t| t.0.as_str()).collect();
        assert_eq!(words, ["rotated", "cafe"]);
    }

    #[test]
    fn invalid_bytes_separate_words() {
        let mut out = Vec::new();
        let seen = Seen::default();
        tokenize_bytes(b"key\xffvault", false, &seen, |term, start, end| {
            out.push((term.to_string(), start, end));
            ffi::SQLITE_OK
        });
        assert_eq!(out, [("key".into(), 0, 3), ("vault".into(), 4, 9)]);
        assert_eq!(seen.ever(), LanguageSet::of(&[Language::English]));
    }

    #[test]
    fn a_failing_callback_stops_the_words() {
        let seen = Seen::default();
        let mut calls = 0;
        let rc = tokenize_bytes(b"a b c", false, &seen, |_, _, _| {
            calls += 1;
            ffi::SQLITE_NOMEM
        });
        assert_eq!((rc, calls), (ffi::SQLITE_NOMEM, 1));
    }
}
