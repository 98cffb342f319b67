//! The fields of a part as the binding carries them: a dict with a `kind` and one
//! entry per field. The binding implements these two traits over Python dicts, so
//! it names no kind and no field itself.

use crate::error::Result;

/// Reads a wire dict's fields. Missing and `None` fields read as `None`; a value
/// of the wrong type is an invalid-input error naming `field`.
pub trait WireSource {
    fn text(&self, key: &str, field: &str) -> Result<Option<String>>;
    fn int(&self, key: &str, field: &str) -> Result<Option<i64>>;
    /// A field of raw bytes (an image's, a document's).
    fn bytes(&self, key: &str, field: &str) -> Result<Option<Vec<u8>>>;

    /// A text field that must be present.
    fn required_text(&self, key: &str, field: &str) -> Result<String> {
        self.text(key, field)?
            .ok_or_else(|| crate::error::Error::invalid(format!("{field}.{key}"), "is required"))
    }
}

/// Writes a wire dict's fields.
pub trait WireSink {
    type Error;
    fn text(&mut self, key: &str, value: Option<&str>) -> std::result::Result<(), Self::Error>;
    fn int(&mut self, key: &str, value: i64) -> std::result::Result<(), Self::Error>;

    /// An int field that may be absent (written as `None`).
    fn maybe_int(&mut self, key: &str, value: Option<i64>) -> std::result::Result<(), Self::Error> {
        match value {
            Some(value) => self.int(key, value),
            None => self.text(key, None),
        }
    }
}
