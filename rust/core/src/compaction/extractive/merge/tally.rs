//! The lines of counts the extractive summariser writes (messages covered, tool
//! calls, tools used), summed over the summaries: kept one per summary they
//! would repeat or, dropped as duplicates, undercount.

use std::collections::HashMap;

use super::super::collect::{
    calls_line, covered_line, tool_count_line, CALLS_PREFIX, COMPLETED_PREFIX, COVERED_PREFIX,
};

/// Sums of the count lines read so far.
#[derive(Debug, Default)]
pub(super) struct Tally<'a> {
    messages: usize,
    seq: Option<(i64, i64)>,
    roles: [usize; 3],
    calls: Option<(usize, usize)>,
    tools: HashMap<&'a str, usize>,
}

impl<'a> Tally<'a> {
    /// Adds `line` when it is a line of counts; false when it is not (or does
    /// not read as one), and is then an ordinary item.
    pub(super) fn add(&mut self, line: &'a str) -> bool {
        if let Some(rest) = line.strip_prefix(COMPLETED_PREFIX) {
            return self.add_tools(rest);
        }
        if let Some(rest) = line.strip_prefix(COVERED_PREFIX) {
            return self.add_covered(rest).is_some();
        }
        if let Some(rest) = line.strip_prefix(CALLS_PREFIX) {
            let Some((calls, errors)) = rest.split_once(", failed: ") else {
                return false;
            };
            let (Ok(calls), Ok(errors)) = (calls.parse::<usize>(), errors.parse::<usize>()) else {
                return false;
            };
            let (all, failed) = self.calls.unwrap_or_default();
            self.calls = Some((all + calls, failed + errors));
            return true;
        }
        false
    }

    /// `"12 (seq 3-14); user 4, assistant 8, system 0"`.
    fn add_covered(&mut self, rest: &str) -> Option<()> {
        let (messages, rest) = rest.split_once(" (seq ")?;
        let (seq, rest) = rest.split_once("); user ")?;
        let (users, rest) = rest.split_once(", assistant ")?;
        let (assistants, systems) = rest.split_once(", system ")?;
        let (lo, hi) = seq.split_once('-').unwrap_or((seq, seq));
        let (lo, hi): (i64, i64) = (lo.parse().ok()?, hi.parse().ok()?);
        let roles: [usize; 3] = [
            users.parse().ok()?,
            assistants.parse().ok()?,
            systems.parse().ok()?,
        ];
        self.messages += messages.parse::<usize>().ok()?;
        for (sum, count) in self.roles.iter_mut().zip(roles) {
            *sum += count;
        }
        self.seq = Some(match self.seq {
            Some((low, high)) => (low.min(lo), high.max(hi)),
            None => (lo, hi),
        });
        Some(())
    }

    /// `"read_file x12, run_tests x4"`. The tools a line left unnamed (`and 3
    /// more tools`) cannot be told apart, so they are not summed.
    fn add_tools(&mut self, rest: &'a str) -> bool {
        let mut named = Vec::new();
        for entry in rest.split(", ") {
            if entry.starts_with("and ") && entry.ends_with(" more tools") {
                continue;
            }
            let Some((name, count)) = entry.rsplit_once(" x") else {
                return false;
            };
            let Ok(count) = count.parse::<usize>() else {
                return false;
            };
            named.push((name, count));
        }
        for (name, count) in named {
            *self.tools.entry(name).or_insert(0) += count;
        }
        true
    }

    /// The summed line of tools used, if any was read.
    pub(super) fn tools_line(&self) -> Option<String> {
        (!self.tools.is_empty()).then(|| tool_count_line(&self.tools))
    }

    /// The summed lines of messages covered and tool calls, those that were read.
    pub(super) fn other_lines(&self) -> Vec<String> {
        let covered = self
            .seq
            .map(|seq| covered_line(self.messages, seq, self.roles));
        let calls = self.calls.map(|(calls, errors)| calls_line(calls, errors));
        covered.into_iter().chain(calls).collect()
    }
}
