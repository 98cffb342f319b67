//! What an image or a document costs a provider, by each provider's published rule.
//! A request counts its inline attachments by these (see `context/replay.rs`);
//! the view counts only their one-line references.

use super::media::Media;
use crate::model::chat::AttachmentKind;

/// The size assumed for an image known only by its URL (never fetched): the
/// largest Anthropic sends unscaled, so no provider's count falls short of it by
/// much for a screenshot or a photo.
pub const UNKNOWN_IMAGE_SIZE: (u32, u32) = (1568, 1568);

/// Tokens per PDF page for Anthropic and OpenAI, which read both a page's text and
/// its image: Anthropic publishes 1,500 to 3,000 per page; the top is taken.
pub const PDF_PAGE_TOKENS: usize = 3_000;

/// Gemini's fixed cost of an image (or a tile of one), and of a PDF page.
pub const GEMINI_TILE_TOKENS: usize = 258;

/// The family of rules a provider counts images by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageRule {
    Anthropic,
    OpenAi,
    Gemini,
}

impl ImageRule {
    /// The rule of `provider` (as `context::provider::provider_of` names it) for
    /// `model`: Claude on any cloud counts as Anthropic does, Gemini models as
    /// Google does, everything else as OpenAI does.
    #[must_use]
    pub fn of(provider: &str, model: &str) -> Self {
        let lower = model.to_ascii_lowercase();
        if matches!(provider, "anthropic" | "bedrock") || lower.contains("claude") {
            ImageRule::Anthropic
        } else if matches!(provider, "gemini" | "vertex_ai") || lower.contains("gemini") {
            ImageRule::Gemini
        } else {
            ImageRule::OpenAi
        }
    }
}

/// Tokens `media` costs when sent inline under `rule`. An image is counted at
/// OpenAI's full detail whatever detail it came with: a request's attachment
/// carries no detail, and OpenAI's `auto` may choose full detail.
#[must_use]
pub fn attachment_tokens(media: &Media, rule: ImageRule) -> usize {
    match media.kind {
        AttachmentKind::Document => {
            let pages = media.pages.unwrap_or(1).max(1) as usize;
            match rule {
                ImageRule::Gemini => pages * GEMINI_TILE_TOKENS,
                ImageRule::Anthropic | ImageRule::OpenAi => pages * PDF_PAGE_TOKENS,
            }
        }
        AttachmentKind::Image => {
            let (width, height) = match (media.width, media.height) {
                (Some(width), Some(height)) => (width, height),
                _ => UNKNOWN_IMAGE_SIZE,
            };
            image_tokens(width, height, None, rule)
        }
    }
}

/// Tokens of a `width`×`height` image under `rule`; `detail` is OpenAI's setting.
#[must_use]
pub fn image_tokens(width: u32, height: u32, detail: Option<&str>, rule: ImageRule) -> usize {
    match rule {
        ImageRule::Anthropic => anthropic_tokens(width, height),
        ImageRule::OpenAi => openai_tokens(width, height, detail),
        ImageRule::Gemini => gemini_tokens(width, height),
    }
}

/// Anthropic: width × height / 750, after an image whose long side is over 1,568
/// pixels, or that would cost over about 1,600 tokens, is scaled down (aspect kept)
/// until it is within both.
fn anthropic_tokens(width: u32, height: u32) -> usize {
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    let long = w.max(h);
    if long > 1568.0 {
        let scale = 1568.0 / long;
        w *= scale;
        h *= scale;
    }
    let limit = 1_600.0 * 750.0;
    if w * h > limit {
        let scale = (limit / (w * h)).sqrt();
        w *= scale;
        h *= scale;
    }
    ((w.floor() * h.floor()) / 750.0).ceil() as usize
}

/// OpenAI (GPT-4o, GPT-4.1 and their kin): `detail: low` is 85 tokens; otherwise
/// the image is fitted within 2,048 × 2,048, then scaled so its short side is 768
/// pixels (never up), and costs 85 plus 170 per 512-pixel tile it covers.
fn openai_tokens(width: u32, height: u32, detail: Option<&str>) -> usize {
    if detail == Some("low") {
        return 85;
    }
    let (mut w, mut h) = (f64::from(width), f64::from(height));
    let long = w.max(h);
    if long > 2048.0 {
        let scale = 2048.0 / long;
        w *= scale;
        h *= scale;
    }
    let short = w.min(h);
    if short > 768.0 {
        let scale = 768.0 / short;
        w *= scale;
        h *= scale;
    }
    let tiles = (w.floor() / 512.0).ceil() * (h.floor() / 512.0).ceil();
    85 + 170 * tiles as usize
}

/// Gemini: 258 tokens for an image with both sides at most 384 pixels; a larger
/// one is cut into 768 × 768 tiles of 258 tokens each.
fn gemini_tokens(width: u32, height: u32) -> usize {
    if width <= 384 && height <= 384 {
        return GEMINI_TILE_TOKENS;
    }
    let tiles = width.div_ceil(768) as usize * height.div_ceil(768) as usize;
    tiles * GEMINI_TILE_TOKENS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_provider_counts_by_its_published_rule() {
        // OpenAI's worked examples: 1024 × 1024 high is 765, 2048 × 4096 is 1105.
        assert_eq!(
            image_tokens(1024, 1024, Some("high"), ImageRule::OpenAi),
            765
        );
        assert_eq!(image_tokens(2048, 4096, None, ImageRule::OpenAi), 1105);
        assert_eq!(image_tokens(4096, 8192, Some("low"), ImageRule::OpenAi), 85);
        // Anthropic: 1092 × 1092 is about 1,590; 1000 × 1000 is 1,334.
        assert_eq!(image_tokens(1000, 1000, None, ImageRule::Anthropic), 1334);
        assert_eq!(image_tokens(200, 200, None, ImageRule::Anthropic), 54);
        assert!(image_tokens(4000, 3000, None, ImageRule::Anthropic) <= 1600);
        assert_eq!(image_tokens(384, 300, None, ImageRule::Gemini), 258);
        assert_eq!(image_tokens(1280, 800, None, ImageRule::Gemini), 4 * 258);
        assert_eq!(
            ImageRule::of("vertex_ai", "vertex_ai/claude-3-7"),
            ImageRule::Anthropic
        );
        assert_eq!(
            ImageRule::of("gemini", "gemini/gemini-2.5-pro"),
            ImageRule::Gemini
        );
        assert_eq!(ImageRule::of("openai", "gpt-4o"), ImageRule::OpenAi);
    }
}
