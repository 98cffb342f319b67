//! The digest of a message: SHA-256 over a canonical encoding of its JSON value, in
//! which object keys are sorted and a key whose value is null counts as absent (a
//! client that rebuilds its messages, or an SDK that fills in `None` fields, hands
//! over the same message). The encoding is tagged and length-prefixed, so no two
//! values share one. Digests are stored, so the encoding never changes.

use sha2::{Digest as _, Sha256};

/// Bytes of a stored digest (a SHA-256 cut to 128 bits: collisions stay out of
/// reach, and a row stays small).
pub const DIGEST_BYTES: usize = 16;

/// The digest of a history up to one position.
pub type Digest = [u8; DIGEST_BYTES];

/// Feeds a JSON value to SHA-256 in the canonical encoding; the caller walks the
/// value (a Python object, a `serde_json::Value`) and says what it meets.
pub struct CanonicalHasher {
    sha: Sha256,
}

impl Default for CanonicalHasher {
    fn default() -> Self {
        Self::new()
    }
}

impl CanonicalHasher {
    #[must_use]
    pub fn new() -> Self {
        Self { sha: Sha256::new() }
    }

    pub fn null(&mut self) {
        self.sha.update(b"n");
    }

    pub fn boolean(&mut self, value: bool) {
        self.sha.update(if value { b"t" } else { b"f" });
    }

    /// An integer; one that fits no i64 comes as its decimal text through `big`.
    pub fn integer(&mut self, value: i64) {
        self.sha.update(b"i");
        self.sha.update(value.to_le_bytes());
    }

    pub fn big_integer(&mut self, decimal: &str) {
        self.sha.update(b"I");
        self.bytes(decimal.as_bytes());
    }

    pub fn float(&mut self, value: f64) {
        self.sha.update(b"d");
        self.sha.update(value.to_bits().to_le_bytes());
    }

    pub fn string(&mut self, value: &str) {
        self.sha.update(b"s");
        self.bytes(value.as_bytes());
    }

    /// The start of an array of `len` items, each fed after it.
    pub fn array(&mut self, len: usize) {
        self.sha.update(b"a");
        self.sha.update((len as u64).to_le_bytes());
    }

    /// The start of an object of `len` non-null members, each fed after it as
    /// [`CanonicalHasher::key`] then its value, keys in byte order.
    pub fn object(&mut self, len: usize) {
        self.sha.update(b"o");
        self.sha.update((len as u64).to_le_bytes());
    }

    pub fn key(&mut self, key: &str) {
        self.bytes(key.as_bytes());
    }

    fn bytes(&mut self, bytes: &[u8]) {
        self.sha.update((bytes.len() as u64).to_le_bytes());
        self.sha.update(bytes);
    }

    /// The digest of what was fed.
    #[must_use]
    pub fn finish(self) -> [u8; 32] {
        self.sha.finalize().into()
    }

    /// Feeds a `serde_json::Value` (the same encoding a binding's walk produces).
    pub fn value(&mut self, value: &serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::Null => self.null(),
            Value::Bool(b) => self.boolean(*b),
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => self.integer(i),
                (None, Some(_)) if n.is_u64() => self.big_integer(&n.to_string()),
                (None, Some(f)) => self.float(f),
                (None, None) => self.big_integer(&n.to_string()),
            },
            Value::String(s) => self.string(s),
            Value::Array(items) => {
                self.array(items.len());
                for item in items {
                    self.value(item);
                }
            }
            Value::Object(map) => {
                let mut members: Vec<_> = map.iter().filter(|(_, v)| !v.is_null()).collect();
                members.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
                self.object(members.len());
                for (key, item) in members {
                    self.key(key);
                    self.value(item);
                }
            }
        }
    }
}

/// The digest a history starts from: that of its separate system text (an
/// Anthropic request's), or of none.
#[must_use]
pub fn chain_seed(system: Option<&[u8; 32]>) -> Digest {
    let mut sha = Sha256::new();
    sha.update(b"lossless.sync.v1");
    match system {
        Some(digest) => {
            sha.update(b"s");
            sha.update(digest);
        }
        None => sha.update(b"-"),
    }
    cut(sha)
}

/// The digest of a history one message longer.
#[must_use]
pub fn chain_next(previous: &Digest, message: &[u8; 32]) -> Digest {
    let mut sha = Sha256::new();
    sha.update(previous);
    sha.update(message);
    cut(sha)
}

fn cut(sha: Sha256) -> Digest {
    let full: [u8; 32] = sha.finalize().into();
    let mut digest = [0; DIGEST_BYTES];
    digest.copy_from_slice(&full[..DIGEST_BYTES]);
    digest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(value: &serde_json::Value) -> [u8; 32] {
        let mut hasher = CanonicalHasher::new();
        hasher.value(value);
        hasher.finish()
    }

    #[test]
    fn key_order_and_null_members_do_not_matter() {
        let a = json!({"role": "user", "content": "hi", "name": null});
        let b = json!({"content": "hi", "role": "user"});
        assert_eq!(of(&a), of(&b));
    }

    #[test]
    fn values_of_other_types_differ() {
        let values = [
            json!("1"),
            json!(1),
            json!(1.0),
            json!([1]),
            json!({"1": 1}),
            json!(null),
            json!(true),
            json!(["a", "b"]),
            json!(["ab"]),
        ];
        let digests: std::collections::HashSet<_> = values.iter().map(of).collect();
        assert_eq!(digests.len(), values.len());
    }

    #[test]
    fn a_chain_depends_on_order_and_seed() {
        let (x, y) = (of(&json!("x")), of(&json!("y")));
        let seed = chain_seed(None);
        let xy = chain_next(&chain_next(&seed, &x), &y);
        let yx = chain_next(&chain_next(&seed, &y), &x);
        assert_ne!(xy, yx);
        let other = chain_seed(Some(&of(&json!("system"))));
        assert_ne!(chain_next(&seed, &x), chain_next(&other, &x));
    }
}
