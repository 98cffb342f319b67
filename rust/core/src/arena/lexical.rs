//! The built-in lexical retriever for external recall: feature hashing of words into
//! a fixed number of buckets, and cosine similarity between the L2-normalised counts.
//!
//! Deterministic and free of any model. Words are lowercased runs of letters, digits
//! and `_`; by default they are hashed as UTF-8 bytes (FNV-1a, 32 bits) into 1,024
//! buckets with English stopwords left out. [`HashMode::Legacy`] reproduces the
//! reference system bit for bit: every word, hashed by UTF-16 code unit into 384
//! buckets.

use crate::lang::{is_stopword, Language};

const FNV_OFFSET: u32 = 0x811C_9DC5;
const FNV_PRIME: u32 = 0x0100_0193;

/// How words become buckets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HashMode {
    /// UTF-8 bytes, stopwords dropped.
    Bytes,
    /// UTF-16 code units, every word kept (the reference system's hashing).
    Legacy,
}

/// A sparse, L2-normalised vector: (bucket, weight), buckets ascending.
pub type Vector = Vec<(u32, f32)>;

/// Lowercased runs of letters, digits and `_`.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
}

fn fnv1a(word: &str, mode: HashMode) -> u32 {
    let mut hash = FNV_OFFSET;
    match mode {
        HashMode::Bytes => {
            for byte in word.bytes() {
                hash = (hash ^ u32::from(byte)).wrapping_mul(FNV_PRIME);
            }
        }
        HashMode::Legacy => {
            for unit in word.encode_utf16() {
                hash = (hash ^ u32::from(unit)).wrapping_mul(FNV_PRIME);
            }
        }
    }
    hash
}

/// The normalised bucket counts of `text`; empty when it holds no word.
#[must_use]
pub fn embed(text: &str, dims: u32, mode: HashMode) -> Vector {
    let dims = dims.max(1);
    let mut buckets: Vec<u32> = words(text)
        .filter(|word| mode == HashMode::Legacy || !is_stopword(word, Language::English))
        .map(|word| fnv1a(&word, mode) % dims)
        .collect();
    buckets.sort_unstable();
    let mut vector: Vec<(u32, f32)> = Vec::new();
    for bucket in buckets {
        match vector.last_mut() {
            Some((last, count)) if *last == bucket => *count += 1.0,
            _ => vector.push((bucket, 1.0)),
        }
    }
    let norm = vector.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
    for (_, weight) in &mut vector {
        *weight /= norm;
    }
    vector
}

/// Cosine of two normalised vectors (0 when either is empty).
#[must_use]
pub fn cosine(a: &Vector, b: &Vector) -> f64 {
    let (mut i, mut j, mut dot) = (0, 0, 0.0_f64);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                dot += f64::from(a[i].1) * f64::from(b[j].1);
                i += 1;
                j += 1;
            }
        }
    }
    dot
}

/// Documents embedded once, searched by cosine.
#[derive(Clone, Debug)]
pub struct LexicalIndex {
    dims: u32,
    mode: HashMode,
    documents: Vec<(String, Vector)>,
}

impl LexicalIndex {
    #[must_use]
    pub fn new(dims: u32, mode: HashMode) -> Self {
        Self {
            dims: dims.max(64),
            mode,
            documents: Vec::new(),
        }
    }

    /// Adds a document; one without any word is never found.
    pub fn add(&mut self, id: &str, text: &str) {
        let vector = embed(text, self.dims, self.mode);
        if !vector.is_empty() {
            self.documents.push((id.to_string(), vector));
        }
    }

    #[must_use]
    pub fn len(&self) -> usize {
        self.documents.len()
    }

    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.documents.is_empty()
    }

    /// The `k` documents most similar to `query` with a similarity of at least
    /// `min_similarity`, best first; equal scores keep the order documents were
    /// added in.
    #[must_use]
    pub fn search(&self, query: &str, k: usize, min_similarity: f64) -> Vec<(String, f64)> {
        let query = embed(query, self.dims, self.mode);
        if query.is_empty() || k == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(usize, f64)> = self
            .documents
            .iter()
            .enumerate()
            .map(|(at, (_, vector))| (at, cosine(&query, vector)))
            .filter(|(_, score)| *score >= min_similarity)
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
            .into_iter()
            .map(|(at, score)| (self.documents[at].0.clone(), score))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_hashing_is_the_reference_fnv1a() {
        // FNV-1a of "a" is 0xE40C292C; ASCII hashes the same by byte and by unit.
        assert_eq!(fnv1a("a", HashMode::Legacy), 0xE40C_292C);
        assert_eq!(
            fnv1a("arena", HashMode::Bytes),
            fnv1a("arena", HashMode::Legacy)
        );
        assert_ne!(fnv1a("é", HashMode::Bytes), fnv1a("é", HashMode::Legacy));
    }

    #[test]
    fn the_closest_document_comes_first_and_ties_keep_their_order() {
        let mut index = LexicalIndex::new(1024, HashMode::Bytes);
        index.add("a", "postgres connection pool exhausted under load");
        index.add("b", "the billing service retries payouts nightly");
        index.add("c", "the billing service retries payouts nightly");
        let hits = index.search("why do payouts retry in billing", 5, 0.08);
        assert_eq!(
            hits.iter().map(|h| h.0.as_str()).collect::<Vec<_>>(),
            ["b", "c"]
        );
        assert!(index.search("", 5, 0.0).is_empty());
    }
}
