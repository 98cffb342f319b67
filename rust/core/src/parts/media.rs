//! An image or a document a participant handed over: a screenshot in a tool's
//! result, a photo or a PDF a user attached. Its bytes are stored once per content
//! (the `media` table, keyed by the part's reference id) and the part keeps what
//! it is: its reference id, MIME type, size, pixels or pages, and the caption it
//! came with. An image known only by its URL is kept as that URL, never fetched.
//!
//! A media part renders as a one-line reference in its message's text (or in its
//! tool result's, when it belongs to one). Only the newest attachments of a view go
//! out inline beside it, decided per request (see `context/replay.rs`), so the
//! stored rendering never changes as an image ages.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::checks::{check_content, check_identifier};
use super::kind::{redacted_text, Columns, PartKind, Rendered, SearchSql, StoredColumns};
use super::media_sniff::{normalized_type, sniff, Sniffed};
use super::wire::{WireSink, WireSource};
use crate::error::{Error, Result};
use crate::model::chat::AttachmentKind;
use crate::redact::{Finding, Redactor};
use crate::tokens::TokenCounter;

/// Hex digits of the SHA-256 in a reference id, as in a file id.
pub const MEDIA_ID_HEX: usize = 32;

/// Longest URL kept: a URL is sent as it is, and a data URL is decoded before.
const MAX_URL_BYTES: usize = 64 * 1024;

/// An image or a document, as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct Media {
    pub kind: AttachmentKind,
    /// `image_<32 hex>` or `document_<32 hex>`: the first digits of the SHA-256 of
    /// its bytes (of its URL, for an image known by URL alone).
    pub media_id: String,
    pub media_type: String,
    /// Bytes of its content; 0 for a URL.
    pub byte_size: i64,
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Pages of a PDF, as counted from its page objects.
    pub pages: Option<u32>,
    pub caption: Option<String>,
    pub url: Option<String>,
    /// OpenAI's `detail` (`low`, `high` or `auto`), as given.
    pub detail: Option<String>,
    pub filename: Option<String>,
    /// The tool call whose result it is part of, when it is.
    pub call_id: Option<String>,
    /// The bytes, when given to the store; never read back with the part (see
    /// `Store::read_media`).
    pub data: Option<Arc<[u8]>>,
}

/// What a caller says of a media part; the rest is read from its bytes.
#[derive(Clone, Debug, Default)]
pub struct MediaInput {
    pub data: Option<Vec<u8>>,
    pub url: Option<String>,
    pub media_type: Option<String>,
    pub caption: Option<String>,
    pub detail: Option<String>,
    pub filename: Option<String>,
    pub call_id: Option<String>,
}

impl Media {
    /// A media part from what a caller gave: bytes (their format read from their
    /// header and checked against a declared type) or an http(s) URL of an image.
    /// `field` names the part in errors.
    pub fn from_input(input: MediaInput, field: &str) -> Result<Media> {
        let declared = input.media_type.as_deref().map(normalized_type);
        let (kind, media_id, media_type, byte_size, size, pages, data) =
            match (input.data, &input.url) {
                (Some(_), Some(_)) => {
                    return Err(Error::invalid(field, "give either data or url, not both"))
                }
                (None, None) => return Err(Error::invalid(field, "needs data or a url")),
                (Some(data), None) => {
                    let sniffed = check_media_bytes(&data, declared.as_deref(), field)?;
                    let id = media_id(sniffed.kind, &data);
                    (
                        sniffed.kind,
                        id,
                        sniffed.media_type.to_string(),
                        data.len() as i64,
                        sniffed.size,
                        sniffed.pages,
                        Some(Arc::from(data)),
                    )
                }
                (None, Some(url)) => {
                    let media_type = declared.unwrap_or_else(|| "image/*".to_string());
                    let id = media_id(AttachmentKind::Image, format!("url:{url}").as_bytes());
                    (AttachmentKind::Image, id, media_type, 0, None, None, None)
                }
            };
        let media = Media {
            kind,
            media_id,
            media_type,
            byte_size,
            width: size.map(|(width, _)| width),
            height: size.map(|(_, height)| height),
            pages,
            caption: input.caption,
            url: input.url,
            detail: input.detail,
            filename: input.filename,
            call_id: input.call_id,
            data,
        };
        MediaKind::validate(&media, field)?;
        Ok(media)
    }

    /// The one line it renders as where it is not sent inline, and beside it where
    /// it is: `[image image_… 1280×800 png, 152 KB: caption]`.
    #[must_use]
    pub fn reference(&self) -> String {
        let mut line = format!("[{} {}", kind_name(self.kind), self.media_id);
        if let (Some(width), Some(height)) = (self.width, self.height) {
            let _ = write!(line, " {width}×{height}");
        }
        let short_type = self
            .media_type
            .rsplit('/')
            .next()
            .unwrap_or(&self.media_type);
        let _ = write!(line, " {short_type}");
        if let Some(pages) = self.pages {
            let _ = write!(line, ", {pages} page{}", if pages == 1 { "" } else { "s" });
        }
        match &self.url {
            Some(url) => {
                let _ = write!(line, ", at {url}");
            }
            None => {
                let _ = write!(line, ", {}", human_size(self.byte_size));
            }
        }
        if let Some(label) = self.label() {
            let _ = write!(line, ": {}", one_line(label));
        }
        line.push(']');
        line
    }

    /// The caption, else the file name it came with.
    #[must_use]
    pub fn label(&self) -> Option<&str> {
        self.caption
            .as_deref()
            .or(self.filename.as_deref())
            .filter(|label| !label.trim().is_empty())
    }
}

/// What `data` is, refused when it is no image (PNG, JPEG, GIF, WebP) or PDF, or
/// not of the `declared` MIME type; `field` names the part in errors.
pub fn check_media_bytes(data: &[u8], declared: Option<&str>, field: &str) -> Result<Sniffed> {
    let sniffed = sniff(data).ok_or_else(|| {
        Error::invalid(
            format!("{field}.data"),
            "is not an image (PNG, JPEG, GIF or WebP) or a PDF document",
        )
    })?;
    if let Some(declared) = declared.map(normalized_type) {
        if declared != sniffed.media_type {
            return Err(Error::invalid(
                format!("{field}.media_type"),
                format!(
                    "declared {declared}, but the bytes are {}",
                    sniffed.media_type
                ),
            ));
        }
    }
    Ok(sniffed)
}

/// `image` or `document`.
#[must_use]
pub fn kind_name(kind: AttachmentKind) -> &'static str {
    match kind {
        AttachmentKind::Image => "image",
        AttachmentKind::Document => "document",
    }
}

fn media_id(kind: AttachmentKind, bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut id = format!("{}_", kind_name(kind));
    for byte in &digest[..MEDIA_ID_HEX / 2] {
        let _ = write!(id, "{byte:02x}");
    }
    id
}

/// Whether `id` is the form of a media reference id.
#[must_use]
pub fn is_media_id(id: &str) -> bool {
    let hex = id
        .strip_prefix("image_")
        .or_else(|| id.strip_prefix("document_"));
    hex.is_some_and(|hex| {
        hex.len() == MEDIA_ID_HEX
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

/// How the line naming a summary's images and documents begins.
pub const MEDIA_LINE_PREFIX: &str = "[images and documents of these messages, read by id: ";

/// `text` with a line naming each image and document of `ids` (among other ids)
/// that it does not name yet: what a summary of a span ends with, before its
/// file-id footer, so compaction never drops the reference of an image.
#[must_use]
pub fn merge_media_line(text: &str, ids: &[String]) -> String {
    let mut missing: Vec<&str> = Vec::new();
    for id in ids {
        if is_media_id(id) && !text.contains(id.as_str()) && !missing.contains(&id.as_str()) {
            missing.push(id);
        }
    }
    if missing.is_empty() {
        return text.to_string();
    }
    let line = format!("{MEDIA_LINE_PREFIX}{}]", missing.join(", "));
    if text.is_empty() {
        line
    } else {
        format!("{text}\n\n{line}")
    }
}

/// [`merge_media_line`], then the file-id footer: every reference a summary of
/// messages holding `ids` keeps.
#[must_use]
pub fn merge_reference_footer(text: &str, ids: &[String]) -> String {
    crate::fileids::merge_file_id_footer(&merge_media_line(text, ids), ids)
}

fn human_size(bytes: i64) -> String {
    if bytes >= 1024 * 1024 {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    } else {
        format!("{} KB", (bytes + 1023) / 1024)
    }
}

/// A caption on one line, so a reference stays a line: control characters and line
/// breaks become spaces, and a long one is cut.
fn one_line(text: &str) -> String {
    let mut line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    crate::model::chat::truncate_chars(&mut line, 200);
    line
}

/// The `media` kind: its fields as a JSON object in the body; its bytes in the
/// `media` table, once per reference id.
pub struct MediaKind;

impl PartKind for MediaKind {
    /// The caption, the one text a caller wrote about the image or document.
    fn redacted(media: &Media, redactor: &Redactor, found: &mut Vec<Finding>) -> Option<Media> {
        let caption = redacted_text(media.caption.as_deref()?, redactor, found)?;
        Some(Media {
            caption: Some(caption),
            ..media.clone()
        })
    }

    type Data = Media;
    const NAME: &'static str = "media";
    const SEARCH_SQL: SearchSql = SearchSql {
        sqlite: Some(
            "concat_ws(' ', p.body ->> '$.media_id', p.body ->> '$.caption',
                 p.body ->> '$.filename', p.body ->> '$.url')",
        ),
        postgres: Some(
            "concat_ws(' ', CAST(p.body AS jsonb) ->> 'media_id',
                 CAST(p.body AS jsonb) ->> 'caption', CAST(p.body AS jsonb) ->> 'filename',
                 CAST(p.body AS jsonb) ->> 'url')",
        ),
    };

    fn validate(media: &Media, field: &str) -> Result<()> {
        if !is_media_id(&media.media_id) {
            return Err(Error::invalid(
                format!("{field}.media_id"),
                "expected image_ or document_ and 32 hex digits",
            ));
        }
        check_identifier(&format!("{field}.media_type"), &media.media_type)?;
        for (name, value) in [("caption", &media.caption), ("filename", &media.filename)] {
            if let Some(value) = value {
                check_content(&format!("{field}.{name}"), value)?;
            }
        }
        if let Some(call_id) = &media.call_id {
            check_identifier(&format!("{field}.call_id"), call_id)?;
        }
        if let Some(detail) = media.detail.as_deref() {
            if !matches!(detail, "low" | "high" | "auto") {
                return Err(Error::invalid(
                    format!("{field}.detail"),
                    format!("expected low, high or auto, got {detail:?}"),
                ));
            }
        }
        if let Some(url) = &media.url {
            if url.len() > MAX_URL_BYTES || url.chars().any(char::is_control) {
                return Err(Error::invalid(
                    format!("{field}.url"),
                    "longer than 64 KiB or holds a control character",
                ));
            }
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("https://") || lower.starts_with("http://")) {
                return Err(Error::invalid(
                    format!("{field}.url"),
                    "expected an http(s) URL; give a data URL's bytes as data",
                ));
            }
        }
        Ok(())
    }

    fn text_bytes(media: &Media) -> usize {
        media.caption.as_ref().map_or(0, String::len)
            + media.url.as_ref().map_or(0, String::len)
            + media.data.as_ref().map_or(0, |data| data.len())
    }

    // Kept with the file ids a part mentions, so a summary of the span it is in
    // names it (see `merge_media_line`) and never loses its reference.
    fn file_ids(media: &Media) -> Vec<String> {
        vec![media.media_id.clone()]
    }

    fn tokens(media: &Media, counter: &TokenCounter) -> (usize, usize) {
        (counter.count(&media.reference()), 0)
    }

    fn columns(media: &Media) -> Columns<'_> {
        let body = serde_json::json!({
            "kind": kind_name(media.kind),
            "media_id": media.media_id,
            "media_type": media.media_type,
            "byte_size": media.byte_size,
            "width": media.width,
            "height": media.height,
            "pages": media.pages,
            "caption": media.caption,
            "url": media.url,
            "detail": media.detail,
            "filename": media.filename,
        });
        Columns {
            body: Cow::Owned(body.to_string()),
            call_id: media.call_id.as_deref(),
            media: media.data.as_deref().map(|data| super::kind::MediaBytes {
                media_id: &media.media_id,
                media_type: &media.media_type,
                data,
            }),
            ..Columns::default()
        }
    }

    fn from_columns(columns: StoredColumns) -> Result<Media> {
        let value: Value = serde_json::from_str(&columns.body)
            .map_err(|err| Error::Sqlite(format!("corrupt media part {}: {err}", columns.id)))?;
        let text = |key: &str| value[key].as_str().map(str::to_string);
        let number = |key: &str| value[key].as_u64().and_then(|n| u32::try_from(n).ok());
        Ok(Media {
            kind: if value["kind"] == "document" {
                AttachmentKind::Document
            } else {
                AttachmentKind::Image
            },
            media_id: text("media_id").unwrap_or_default(),
            media_type: text("media_type").unwrap_or_default(),
            byte_size: value["byte_size"].as_i64().unwrap_or(0),
            width: number("width"),
            height: number("height"),
            pages: number("pages"),
            caption: text("caption"),
            url: text("url"),
            detail: text("detail"),
            filename: text("filename"),
            call_id: columns.call_id,
            data: None,
        })
    }

    fn write_wire<S: WireSink>(media: &Media, sink: &mut S) -> std::result::Result<(), S::Error> {
        sink.text("media_kind", Some(kind_name(media.kind)))?;
        sink.text("media_id", Some(&media.media_id))?;
        sink.text("media_type", Some(&media.media_type))?;
        sink.int("byte_size", media.byte_size)?;
        sink.maybe_int("width", media.width.map(i64::from))?;
        sink.maybe_int("height", media.height.map(i64::from))?;
        sink.maybe_int("pages", media.pages.map(i64::from))?;
        sink.text("caption", media.caption.as_deref())?;
        sink.text("url", media.url.as_deref())?;
        sink.text("detail", media.detail.as_deref())?;
        sink.text("filename", media.filename.as_deref())?;
        sink.text("call_id", media.call_id.as_deref())
    }

    fn read_wire<S: WireSource>(source: &S, field: &str) -> Result<Media> {
        let input = MediaInput {
            data: source.bytes("data", field)?,
            url: source.text("url", field)?,
            media_type: source.text("media_type", field)?,
            caption: source.text("caption", field)?,
            detail: source.text("detail", field)?,
            filename: source.text("filename", field)?,
            call_id: source.text("call_id", field)?,
        };
        Media::from_input(input, field)
    }

    fn render<'a>(media: &'a Media, _pruned: Option<&'a str>) -> Rendered<'a> {
        Rendered::Media(media)
    }

    fn transcript<'a>(media: &'a Media, _pruned: Option<&'a str>) -> Cow<'a, str> {
        Cow::Owned(media.reference())
    }

    fn write_full(media: &Media, _pruned: bool, out: &mut String) {
        let _ = write!(
            out,
            "{} {} ({}), read its bytes with read_media\n{}",
            kind_name(media.kind),
            media.media_id,
            media.media_type,
            media.reference()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parts::Part;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(width.to_be_bytes());
        png.extend(height.to_be_bytes());
        png.extend([8, 6, 0, 0, 0]);
        png
    }

    fn input(data: Vec<u8>, media_type: Option<&str>) -> MediaInput {
        MediaInput {
            data: Some(data),
            media_type: media_type.map(str::to_string),
            caption: Some("the login page".into()),
            ..MediaInput::default()
        }
    }

    #[test]
    fn an_image_is_known_by_its_bytes_and_referenced_by_their_hash() {
        let media =
            Media::from_input(input(png(1280, 800), Some("image/png")), "parts[0]").unwrap();
        assert!(media.media_id.starts_with("image_") && is_media_id(&media.media_id));
        assert_eq!((media.width, media.height), (Some(1280), Some(800)));
        assert_eq!(
            media.reference(),
            format!(
                "[image {} 1280×800 png, 1 KB: the login page]",
                media.media_id
            )
        );
        let again = Media::from_input(input(png(1280, 800), None), "parts[0]").unwrap();
        assert_eq!(again.media_id, media.media_id);
    }

    #[test]
    fn bytes_that_are_no_image_or_disagree_with_their_type_are_refused() {
        let err = Media::from_input(input(b"plain text".to_vec(), None), "parts[1]").unwrap_err();
        assert!(err.to_string().starts_with("parts[1].data:"), "{err}");
        let err = Media::from_input(input(png(2, 2), Some("image/jpeg")), "parts[1]").unwrap_err();
        assert!(err.to_string().contains("declared image/jpeg"), "{err}");
        let url = MediaInput {
            url: Some("file:///etc/passwd".into()),
            ..MediaInput::default()
        };
        assert!(Media::from_input(url, "parts[1]").is_err());
    }

    #[test]
    fn the_stored_columns_read_back_without_the_bytes() {
        let media = Media::from_input(input(png(4, 3), None), "parts[0]").unwrap();
        let part = Part::Media(media.clone());
        let columns = part.columns();
        assert_eq!(columns.media.as_ref().unwrap().data, png(4, 3).as_slice());
        let back = Part::from_columns(
            "media",
            StoredColumns {
                id: "prt_1".into(),
                body: columns.body.into_owned(),
                ..StoredColumns::default()
            },
        )
        .unwrap();
        assert_eq!(
            back,
            Part::Media(Media {
                data: None,
                ..media
            })
        );
    }
}
