//! The plan as text: identity and truth for the system message, the other zones as
//! one delimited block that goes with the newest user message.

use super::plan::Plan;
use super::zones::{Entry, Zone};

/// What a plan injects, rendered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rendered {
    /// Identity and truth, to follow the system prompt; empty when neither has
    /// an entry.
    pub stable: String,
    /// Task state, tool failures, working memory and recall, in one block; empty
    /// when none has an entry.
    pub volatile: String,
}

/// Renders `plan`'s accepted entries of `entries`. Inside a zone, entries appear
/// oldest first whatever order the plan chose them in, so a new pin adds to the end
/// of the system message and what was before it stays byte for byte the same.
#[must_use]
pub fn render(entries: &[Entry], plan: &Plan) -> Rendered {
    let refs: Vec<&Entry> = entries.iter().collect();
    render_refs(&refs, plan)
}

/// [`render`] over the borrowed entries a plan was made over.
#[must_use]
pub fn render_refs(entries: &[&Entry], plan: &Plan) -> Rendered {
    let mut by_zone: [Vec<(i64, &str)>; 7] = Default::default();
    for accepted in &plan.accepted {
        let entry = entries[accepted.index];
        let text = accepted.text.as_deref().unwrap_or(&entry.text);
        by_zone[entry.zone.index()].push((entry.seq, text));
    }
    let mut stable = String::new();
    let mut volatile = String::new();
    for zone in Zone::ALL {
        let texts = &mut by_zone[zone.index()];
        if texts.is_empty() {
            continue;
        }
        texts.sort_by_key(|(seq, _)| *seq);
        let target = if zone.is_stable() {
            &mut stable
        } else {
            &mut volatile
        };
        if !target.is_empty() {
            target.push('\n');
        }
        target.push('<');
        target.push_str(zone.as_str());
        target.push_str(">\n");
        for (at, (_, text)) in texts.iter().enumerate() {
            if at > 0 {
                target.push_str("\n\n");
            }
            target.push_str(text);
        }
        target.push_str("\n</");
        target.push_str(zone.as_str());
        target.push('>');
    }
    if !volatile.is_empty() {
        volatile = format!("<context>\n{volatile}\n</context>");
    }
    Rendered { stable, volatile }
}
