//! The file-id lists stored beside messages and summaries: one column of ids
//! joined by spaces, and the list that gathers them in first-seen order.

use std::collections::HashSet;

/// Ids in first-seen order without repeats.
#[derive(Default)]
pub(crate) struct IdList {
    seen: HashSet<String>,
    pub(crate) ids: Vec<String>,
}

impl IdList {
    pub(crate) fn extend<I: IntoIterator<Item = String>>(&mut self, ids: I) {
        for id in ids {
            if !self.seen.contains(&id) {
                self.seen.insert(id.clone());
                self.ids.push(id);
            }
        }
    }
}

/// The column value of `ids`: joined by spaces, `NULL` when there are none.
pub(crate) fn join_ids(ids: &[String]) -> Option<String> {
    (!ids.is_empty()).then(|| ids.join(" "))
}

/// The ids of a column value.
pub(crate) fn split_ids(joined: Option<&str>) -> Vec<String> {
    joined
        .map(|text| {
            text.split(' ')
                .filter(|id| !id.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}
