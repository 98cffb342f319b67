//! Condensing live summaries without a model: merged section by section
//! (`condense_merge`), or, the level-3 fallback, joined and cut (`condense_truncate`).
//! Both keep every file id of every summary in the footer.

use crate::db::id_list::IdList;
use crate::error::{Error, Result};
use crate::extractive::merge_summaries;
use crate::fileids::FOOTER_PREFIX;
use crate::parts::{merge_reference_footer, MEDIA_LINE_PREFIX};
use crate::store::Store;
use crate::tokens::TokenCounter;

use super::summaries::TextResult;

/// Rounds of fitting a merge beside its footer before it gives up its body: a
/// joined text counts a token or two apart from its pieces, so one more round
/// nearly always fits.
const FOOTER_FIT_ROUNDS: usize = 4;

/// The summaries being condensed: their texts without footers, oldest first,
/// the union of their file ids and the session's counter.
struct Sources {
    bodies: Vec<String>,
    file_ids: Vec<String>,
    counter: TokenCounter,
}

impl Store {
    /// Summaries merged section by section within `max_tokens`, the newest kept
    /// (see [`merge_summaries`]), with a footer that keeps every file id of every
    /// one of them (kept even when it alone is larger). The summaries' texts are
    /// all it reads: an erased summary holds only its marker.
    pub fn condense_merge(
        &mut self,
        summary_ids: &[String],
        max_tokens: i64,
    ) -> Result<TextResult> {
        let Sources {
            bodies,
            file_ids,
            counter,
        } = self.condense_sources(summary_ids)?;
        // The media line is written again from the ids: a body holds sections only.
        let bodies: Vec<&str> = bodies.iter().map(|body| without_media_line(body)).collect();
        let footer_tokens = counter.count(&merge_reference_footer("", &file_ids)) as i64;
        let mut room = (max_tokens - footer_tokens - 2).max(0);
        for round in 1..=FOOTER_FIT_ROUNDS {
            if round == FOOTER_FIT_ROUNDS {
                room = 0;
            }
            let body = merge_summaries(&bodies, room as usize, &|text| counter.count(text));
            let text = merge_reference_footer(&body, &file_ids);
            let token_count = counter.count(&text) as i64;
            if token_count <= max_tokens || room == 0 {
                return Ok(TextResult {
                    token_count,
                    text,
                    message_ids: Vec::new(),
                    file_ids,
                });
            }
            room = (room - (token_count - max_tokens) - 1).max(0);
        }
        unreachable!("the last round has no room and returns")
    }

    /// Level-3 condensation: the summaries' texts (without their footers) joined
    /// and cut so the result holds at most `max_tokens`, with a footer that keeps
    /// every file id of every one of them (kept even when it alone is larger).
    pub fn condense_truncate(
        &mut self,
        summary_ids: &[String],
        max_tokens: i64,
    ) -> Result<TextResult> {
        let Sources {
            bodies,
            file_ids,
            counter,
        } = self.condense_sources(summary_ids)?;
        let bodies: Vec<&str> = bodies
            .iter()
            .map(String::as_str)
            .filter(|body| !body.is_empty())
            .collect();
        let joined = bodies.join("\n\n");
        let footer_tokens = counter.count(&merge_reference_footer("", &file_ids)) as i64;
        let mut room = (max_tokens - footer_tokens - 2).max(0) as usize;
        loop {
            let mut body = cut_to_tokens(&joined, room, &|text| counter.count(text));
            if body.len() < joined.len() {
                // Never end on a fragment of a word: a cut file id would read as another id.
                let end = body.rfind(char::is_whitespace).unwrap_or(0);
                body.truncate(end);
                body.push_str(" [...]");
            }
            let text = merge_reference_footer(&body, &file_ids);
            let token_count = counter.count(&text) as i64;
            if token_count <= max_tokens || room == 0 {
                return Ok(TextResult {
                    token_count,
                    text,
                    message_ids: Vec::new(),
                    file_ids,
                });
            }
            room = room.saturating_sub((token_count - max_tokens) as usize + 1);
        }
    }

    /// The summaries `summary_ids` (at least one, all of one session) as a
    /// condensation reads them.
    fn condense_sources(&mut self, summary_ids: &[String]) -> Result<Sources> {
        let Some(first) = summary_ids.first() else {
            return Err(Error::invalid(
                "summary_ids",
                "must name at least one summary",
            ));
        };
        let session_id = self.summary(first)?.session_id;
        let counter = self.counter(&session_id)?;
        let mut file_ids = IdList::default();
        let mut bodies = Vec::with_capacity(summary_ids.len());
        for id in summary_ids {
            let row = self.summary(id)?;
            if row.session_id != session_id {
                return Err(Error::invalid(
                    "summary_ids",
                    format!("{id} belongs to another session"),
                ));
            }
            file_ids.extend(row.file_ids);
            bodies.push(without_footer(&row.text).to_owned());
        }
        Ok(Sources {
            bodies,
            file_ids: file_ids.ids,
            counter,
        })
    }
}

/// `text` without its file-id footer.
fn without_footer(text: &str) -> &str {
    let separator = format!("\n\n{FOOTER_PREFIX}");
    match text.rfind(&separator) {
        Some(at) => &text[..at],
        None if text.starts_with(FOOTER_PREFIX) => "",
        None => text,
    }
}

/// `body` without the line naming its images and documents, which ends it when
/// there is one.
fn without_media_line(body: &str) -> &str {
    match body.rfind(MEDIA_LINE_PREFIX) {
        Some(at) if (at == 0 || body[..at].ends_with('\n')) && !body[at..].contains('\n') => {
            body[..at].trim_end()
        }
        _ => body,
    }
}

/// The longest prefix of `text` (on a character boundary) within `limit` tokens.
fn cut_to_tokens(text: &str, limit: usize, count: &dyn Fn(&str) -> usize) -> String {
    if count(text) <= limit {
        return text.to_string();
    }
    // Binary search over character offsets: O(log n) counts instead of one per line.
    let bounds: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    let (mut low, mut high) = (0, bounds.len() - 1);
    while low < high {
        let mid = (low + high).div_ceil(2);
        if count(&text[..bounds[mid]]) <= limit {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    text[..bounds[low]].to_string()
}
