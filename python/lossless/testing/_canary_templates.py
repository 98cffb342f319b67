"""How canaries are worded: several phrasings per type, each naming its subject
(what a restatement supersedes) and the kind of value it carries.

Rules are worded the many ways people state them, not only with "must" or "never":
an escalation ("stop and escalate to ... if ..."), "under no circumstances",
"please refrain from", "only ... after ...". Constraints put the limit and the rule
in separate sentences where people do ("Budget cap is $N total. Never exceed it.").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from lossless.testing._canary_values import ValueKind

__all__ = ["CANARY_TYPES", "RESTATEMENTS", "TEMPLATES", "CanaryType", "Template"]

CanaryType = Literal["rule", "constraint", "fact", "decision", "goal", "preference"]
CANARY_TYPES: tuple[CanaryType, ...] = (
    "rule",
    "constraint",
    "fact",
    "decision",
    "goal",
    "preference",
)


@dataclass(frozen=True, slots=True)
class Template:
    """One phrasing: its text (with ``{value}``), the subject a later statement of a
    new value names, and the kind of value it carries."""

    text: str
    subject: str
    kind: ValueKind


_T = Template

TEMPLATES: dict[CanaryType, tuple[Template, ...]] = {
    "rule": (
        _T(
            "Stop and escalate to the on-call engineer, {value}, if the error rate "
            "goes above five percent.",
            "on-call engineer",
            "name",
        ),
        _T("Under no circumstances run migrations against {value}.", "protected database", "host"),
        _T("Please refrain from editing anything under {value}.", "frozen directory", "path"),
        _T("Only deploy after change ticket {value} is approved.", "approval ticket", "ticket"),
        _T("Never push to the branch {value}.", "protected branch", "branch"),
        _T(
            "If a test touches the account {value}, do not run it: that account is live.",
            "live account",
            "account",
        ),
        _T(
            "You must not rotate the signing key {value} without asking me first.",
            "signing key",
            "code",
        ),
        _T(
            "Do not page anyone outside {value}, whatever breaks.",
            "escalation channel",
            "channel",
        ),
    ),
    "constraint": (
        _T("Budget cap is {value} total. Never exceed it.", "budget cap", "amount"),
        _T("The hard deadline is {value}; nothing ships after that.", "deadline", "date"),
        _T(
            "Keep peak memory below {value}. That is the container limit.",
            "memory limit",
            "megabytes",
        ),
        _T("The API quota is {value}. Do not go over it.", "API quota", "rate"),
        _T("Latency must stay under {value} at p99.", "latency limit", "milliseconds"),
        _T("No more than {value}. That is a hard limit.", "worker limit", "workers"),
        _T(
            "We may spend at most {value} on cloud credits this month.",
            "cloud credit limit",
            "amount",
        ),
    ),
    "fact": (
        _T("The vault code is {value}.", "vault code", "code"),
        _T("For reference, our account number is {value}.", "account number", "account"),
        _T("The staging host is {value}.", "staging host", "host"),
        _T("The config file lives at {value}.", "config path", "path"),
        _T("Our customer contact there is {value}.", "customer contact", "name"),
        _T("FYI, the release date is {value}.", "release date", "date"),
        _T("The incident we are tracking is {value}.", "incident ticket", "ticket"),
    ),
    "decision": (
        _T("We decided to use {value} for the job queue.", "queue library", "library"),
        _T("Going with {value} as the rollout strategy.", "rollout strategy", "codename"),
        _T("Let's settle on {value} for parsing the exports.", "parser library", "library"),
        _T("Decision: the shared cache goes on {value}.", "cache host", "host"),
        _T(
            "After weighing both options, we'll use the {value} schema for events.",
            "event schema",
            "codename",
        ),
        _T("Final call: we pin the SDK at {value}.", "SDK version", "version"),
    ),
    "goal": (
        _T(
            "The goal is to move every consumer of the billing API onto {value}.",
            "target endpoint",
            "endpoint",
        ),
        _T("I want you to get checkout p95 under {value}.", "latency target", "milliseconds"),
        _T("Your task: close epic {value} by making all of its tests pass.", "epic", "ticket"),
        _T("What I need from you is release {value} out the door.", "release", "version"),
        _T(
            "The objective is to migrate the reports service to region {value}.",
            "target region",
            "region",
        ),
        _T(
            "The aim of this work is an error budget burn below {value} for payments.",
            "error budget target",
            "percent",
        ),
    ),
    "preference": (
        _T("I prefer commit messages prefixed with {value}.", "commit prefix", "tag"),
        _T("Keep answers short, under {value}.", "answer length", "words"),
        _T("Reply in {value} rather than by email.", "reply channel", "channel"),
        _T("I'd like branch names to start with {value}.", "branch prefix", "codename"),
        _T(
            "Please copy {value} on every status report, I prefer it that way.",
            "report recipient",
            "email",
        ),
        _T("I'd rather new test files end in {value}.", "test file suffix", "suffix"),
    ),
}

# A restatement names the subject it supersedes, as people do when a value changes.
RESTATEMENTS: tuple[str, ...] = (
    "Update: the {subject} changed to {value}.",
    "Actually, use {value} instead for the {subject}.",
    "Correction: the {subject} is now {value}; the earlier one no longer applies.",
    "Heads up, the {subject} is now {value}.",
)
