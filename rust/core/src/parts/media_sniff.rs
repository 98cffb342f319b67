//! What a media part's bytes are, read from their first bytes: the format and, for
//! an image, its size in pixels from its header (PNG, JPEG, GIF, WebP); for a PDF,
//! its page count. Nothing is decoded: a header is a few dozen bytes.

use memchr::memmem;

use crate::model::chat::AttachmentKind;

/// What the bytes of a media part turned out to be.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sniffed {
    pub kind: AttachmentKind,
    pub media_type: &'static str,
    /// Width and height in pixels, for an image.
    pub size: Option<(u32, u32)>,
    /// Pages, for a PDF.
    pub pages: Option<u32>,
}

/// The format of `bytes`, or `None` when they are none of PNG, JPEG, GIF, WebP or PDF.
/// An image whose header holds no size (cut off, or a zero side) is `None` too.
#[must_use]
pub fn sniff(bytes: &[u8]) -> Option<Sniffed> {
    let image = |media_type, size: Option<(u32, u32)>| {
        size.filter(|&(width, height)| width > 0 && height > 0)
            .map(|size| Sniffed {
                kind: AttachmentKind::Image,
                media_type,
                size: Some(size),
                pages: None,
            })
    };
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        image("image/png", png_size(bytes))
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        image("image/jpeg", jpeg_size(bytes))
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        image("image/gif", gif_size(bytes))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        image("image/webp", webp_size(bytes))
    } else if bytes.starts_with(b"%PDF-") {
        Some(Sniffed {
            kind: AttachmentKind::Document,
            media_type: "application/pdf",
            size: None,
            pages: Some(pdf_pages(bytes)),
        })
    } else {
        None
    }
}

/// A declared MIME type in the form [`sniff`] names it (`image/jpg` is JPEG's
/// common misspelling), lower case, parameters dropped.
#[must_use]
pub fn normalized_type(declared: &str) -> String {
    let base = declared.split(';').next().unwrap_or_default().trim();
    let lower = base.to_ascii_lowercase();
    if lower == "image/jpg" || lower == "image/pjpeg" {
        "image/jpeg".to_string()
    } else {
        lower
    }
}

fn be_u32(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn be_u16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_be_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le_u16(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from(u16::from_le_bytes(
        bytes.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le_u24(bytes: &[u8], at: usize) -> Option<u32> {
    let b = bytes.get(at..at + 3)?;
    Some(u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16)
}

/// The IHDR chunk comes first: its width and height follow its length and type.
fn png_size(bytes: &[u8]) -> Option<(u32, u32)> {
    (bytes.get(12..16)? == b"IHDR").then_some(())?;
    Some((be_u32(bytes, 16)?, be_u32(bytes, 20)?))
}

fn gif_size(bytes: &[u8]) -> Option<(u32, u32)> {
    Some((le_u16(bytes, 6)?, le_u16(bytes, 8)?))
}

/// The first start-of-frame marker holds the size; the segments before it are
/// skipped by their lengths.
fn jpeg_size(bytes: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        while *bytes.get(at)? != 0xFF {
            at += 1;
        }
        while *bytes.get(at)? == 0xFF {
            at += 1;
        }
        let marker = *bytes.get(at)?;
        at += 1;
        if matches!(marker, 0xD8 | 0x01 | 0xD0..=0xD7) {
            continue;
        }
        let length = be_u16(bytes, at)? as usize;
        let frame = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if frame {
            return Some((be_u16(bytes, at + 5)?, be_u16(bytes, at + 3)?));
        }
        if length < 2 {
            return None;
        }
        at += length;
    }
}

/// The first chunk says which of WebP's three encodings it is, each with the size
/// where that encoding keeps it.
fn webp_size(bytes: &[u8]) -> Option<(u32, u32)> {
    match bytes.get(12..16)? {
        b"VP8 " => Some((le_u16(bytes, 26)? & 0x3FFF, le_u16(bytes, 28)? & 0x3FFF)),
        b"VP8L" => {
            let bits = u32::from_le_bytes(bytes.get(21..25)?.try_into().ok()?);
            Some((1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)))
        }
        b"VP8X" => Some((1 + le_u24(bytes, 24)?, 1 + le_u24(bytes, 27)?)),
        _ => None,
    }
}

/// Pages of a PDF: its page objects (`/Type /Page`, not the `/Pages` tree nodes),
/// at least one. Objects kept in compressed streams are not seen, so this can count
/// too few for such a file; it is a cost estimate, never a refusal.
fn pdf_pages(bytes: &[u8]) -> u32 {
    let mut pages = 0_u32;
    for needle in [&b"/Type /Page"[..], &b"/Type/Page"[..]] {
        for at in memmem::find_iter(bytes, needle) {
            if bytes.get(at + needle.len()) != Some(&b's') {
                pages = pages.saturating_add(1);
            }
        }
    }
    pages.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_known_by_its_header() {
        let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        png.extend(1280_u32.to_be_bytes());
        png.extend(800_u32.to_be_bytes());
        assert_eq!(sniff(&png).unwrap().size, Some((1280, 800)));
        let gif = b"GIF89a\x40\x01\xf0\x00";
        assert_eq!(sniff(gif).unwrap().size, Some((320, 240)));
        // SOI, an APP0 segment of 4 bytes, then SOF0: precision, height, width.
        let jpeg = [
            0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00, 0xFF, 0xC0, 0x00, 0x11, 0x08, 0x02,
            0x58, 0x03, 0x20,
        ];
        assert_eq!(sniff(&jpeg).unwrap().size, Some((800, 600)));
        let mut webp = b"RIFF\0\0\0\0WEBPVP8X\x0a\0\0\0\0\0\0\0".to_vec();
        webp.extend([0x7F, 0x02, 0x00, 0xDF, 0x01, 0x00]);
        assert_eq!(sniff(&webp).unwrap().size, Some((640, 480)));
        let pdf = b"%PDF-1.7\n<< /Type /Pages /Count 2 >> << /Type /Page >> << /Type/Page >>";
        assert_eq!(sniff(pdf).unwrap().pages, Some(2));
        assert!(sniff(b"hello").is_none());
        assert!(sniff(b"\x89PNG\r\n\x1a\n").is_none(), "no header, no size");
        assert_eq!(normalized_type("Image/JPG; q=1"), "image/jpeg");
    }
}
