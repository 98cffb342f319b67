//! The session ledger: typed items (rules, constraints, facts with their values,
//! decisions, preferences, goals and the state of the work, and the files, commands
//! and errors the tools touched) that compaction keeps and every request carries.
//!
//! Summaries lose detail by design; the ledger is what must not be lost. Each item
//! has a subject, so a value stated again replaces the old one in the request while
//! every earlier value stays stored. Items are found in the messages compaction
//! takes out of the view ([`extract`]), folded into the live items by subject
//! ([`merge`]) and rendered under a cap ([`render`]): the stable kinds for the
//! system message, the rest next to the newest user message.

mod cues;
mod extract;
mod merge;
mod records;
mod render;
mod sentences;
pub mod store;
mod subject;
#[cfg(test)]
mod tests;

pub use extract::extract;
pub use merge::{merge, Change};
pub use render::{render, Rendered};
pub use subject::subject_of;

use crate::error::{Error, Result};

/// What an item is. The first five are stable (they change when the user changes
/// them); the rest describe the work in progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    Rule,
    Constraint,
    Fact,
    Decision,
    Preference,
    Goal,
    State,
    Error,
    Command,
    File,
}

impl Kind {
    /// Every kind, in the order the ledger keeps them when it is over its cap.
    pub const ALL: [Kind; 10] = [
        Kind::Rule,
        Kind::Constraint,
        Kind::Fact,
        Kind::Decision,
        Kind::Preference,
        Kind::Goal,
        Kind::State,
        Kind::Error,
        Kind::Command,
        Kind::File,
    ];

    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Rule => "rule",
            Kind::Constraint => "constraint",
            Kind::Fact => "fact",
            Kind::Decision => "decision",
            Kind::Preference => "preference",
            Kind::Goal => "goal",
            Kind::State => "state",
            Kind::Error => "error",
            Kind::Command => "command",
            Kind::File => "file",
        }
    }

    /// The heading of the kind's list in the rendered ledger.
    #[must_use]
    pub fn heading(self) -> &'static str {
        match self {
            Kind::Rule => "Rules",
            Kind::Constraint => "Hard constraints",
            Kind::Fact => "Facts",
            Kind::Decision => "Decisions",
            Kind::Preference => "Preferences",
            Kind::Goal => "Goals",
            Kind::State => "State",
            Kind::Error => "Errors",
            Kind::Command => "Commands run",
            Kind::File => "Files",
        }
    }

    pub fn parse(value: &str) -> Result<Kind> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == value)
            .ok_or_else(|| {
                Error::invalid(
                    "kind",
                    format!(
                        "unknown ledger kind {value:?}; expected one of {}",
                        Kind::ALL.map(Kind::as_str).join(", ")
                    ),
                )
            })
    }

    /// Rules, constraints, facts, decisions and preferences: rendered in the system
    /// message, which changes only when one of them does.
    #[must_use]
    pub fn is_stable(self) -> bool {
        matches!(
            self,
            Kind::Rule | Kind::Constraint | Kind::Fact | Kind::Decision | Kind::Preference
        )
    }

    /// Kept first when the ledger is over its cap (lower is kept first).
    #[must_use]
    pub fn rank(self) -> usize {
        self as usize
    }

    /// The kind a restated item keeps: a fact restated about a rule's subject is
    /// still that rule (a cap stated again as a plain value stays a constraint).
    #[must_use]
    pub fn stronger(self, other: Kind) -> Kind {
        if self.is_stable() && other.is_stable() {
            self.min(other)
        } else {
            other
        }
    }
}

/// Who wrote an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Found in the messages by the built-in rules.
    Extracted,
    /// Returned by a summarisation model (checked against a schema).
    Model,
    /// Added, corrected or removed through the API.
    Caller,
}

impl Origin {
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Extracted => "extracted",
            Origin::Model => "model",
            Origin::Caller => "caller",
        }
    }

    pub fn parse(value: &str) -> Result<Origin> {
        match value {
            "extracted" => Ok(Origin::Extracted),
            "model" => Ok(Origin::Model),
            "caller" => Ok(Origin::Caller),
            _ => Err(Error::invalid(
                "origin",
                format!("expected extracted, model or caller, got {value:?}"),
            )),
        }
    }
}

/// An item found in messages (or handed in), before it is folded into the ledger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    pub kind: Kind,
    pub subject: String,
    pub text: String,
    /// The position of the message it came from.
    pub seq: i64,
    /// A value this item says it replaces ("use X instead of Y": Y).
    pub replaces: Option<String>,
    /// States a new value ("changed to", "is now", "instead", "correction"): when
    /// no live item has its subject, it replaces the one whose subject it names.
    pub restates: bool,
    /// Only updates an item already live (an error resolved by a later success).
    pub only_if_live: bool,
}

impl Found {
    #[must_use]
    pub fn new(kind: Kind, subject: String, text: String, seq: i64) -> Found {
        Found {
            kind,
            subject,
            text,
            seq,
            replaces: None,
            restates: false,
            only_if_live: false,
        }
    }
}

/// A live item: the newest value of its subject.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub id: String,
    pub kind: Kind,
    pub subject: String,
    pub text: String,
    pub origin: Origin,
    /// Where the subject was first seen: the item keeps its place when it changes.
    pub first_seq: i64,
    /// The position of its newest source.
    pub seq: i64,
    /// The ledger's own sequence number of this value.
    pub ord: i64,
    /// Replaced an earlier value of its subject.
    pub changed: bool,
    /// The messages it came from (newest value), when known.
    pub message_ids: Vec<String>,
}
