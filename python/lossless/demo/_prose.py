"""Sentence templates for the user requests and the explanations around tool calls.

Templates use :class:`string.Template` placeholders filled from an episode's slots
(``$noun``, ``$fn``, ``$path``, ...). Everything here is plain ASCII.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Template


@dataclass(frozen=True, slots=True)
class Request:
    """One kind of task the user hands over.

    ``module_kind`` pins the module the task is about (``None``: any). ``fix`` names the
    code snippet the edit inserts; ``breaks`` says whether a test fails until it lands.
    """

    key: str
    module_kind: str | None
    text: str
    fix: str
    breaks: bool
    change: str


REQUESTS: tuple[Request, ...] = (
    Request(
        "retries",
        "client",
        "Now add retries to the $noun client: at most $n attempts with exponential backoff "
        "and jitter, and only for idempotent calls.",
        "retry",
        False,
        "$fn now retries timeouts and 5xx answers with capped exponential backoff",
    ),
    Request(
        "ci_failure",
        None,
        "The CI failed on $test, fix it.",
        "rounding",
        True,
        "$fn quantizes once, after summing, so $test passes again",
    ),
    Request(
        "rounding",
        "rounding",
        "$Noun totals are off by one cent for $cur when the amount ends in 5. "
        "Find out why and fix it.",
        "rounding",
        True,
        "$fn rounds half-even to the currency's minor units instead of truncating",
    ),
    Request(
        "regression",
        None,
        "Add a regression test for $fn covering the $qualifier case.",
        "test",
        False,
        "$fn is unchanged; the new test pins its behaviour",
    ),
    Request(
        "idempotency",
        "handlers",
        "The webhook handler for ${nouns} returns 500 when the same event is delivered "
        "twice. Make it idempotent.",
        "idempotency",
        True,
        "$fn returns the stored result for an event it has already applied",
    ),
    Request(
        "logging",
        "service",
        "Add structured logging to $path: include the $noun id and the attempt number "
        "in every line.",
        "logging",
        False,
        "$fn logs the $noun id and attempt number as structured fields",
    ),
    Request(
        "timeout",
        "client",
        "Make the $noun upstream timeout configurable, default ${n}0 seconds, read from settings.",
        "timeout",
        False,
        "$fn reads its timeout from settings instead of DEFAULT_TIMEOUT_S",
    ),
    Request(
        "flaky",
        None,
        "$test is flaky on CI, it fails about one run in ten. Can you find out why?",
        "clock",
        True,
        "$fn takes the time from the injected clock, so the test no longer races midnight",
    ),
    Request(
        "typing",
        None,
        "Please add type hints to $path so mypy --strict passes on it.",
        "typing",
        False,
        "$fn and its helpers are fully annotated",
    ),
    Request(
        "currency",
        "rounding",
        "We need to support $cur in the $domain flow; it has $minor minor units, not 2.",
        "currency",
        True,
        "$fn looks up minor units per currency instead of assuming 2",
    ),
    Request(
        "dry_run",
        "tasks",
        "Add a dry-run flag to the $noun batch job that logs what it would do without "
        "writing anything.",
        "dry_run",
        False,
        "$fn takes dry_run and only logs the chunks it would process",
    ),
    Request(
        "not_found",
        "handlers",
        "GET /v1/${nouns}/<id> returns 500 instead of 404 for unknown ids. Fix it and add a test.",
        "null_guard",
        True,
        "$fn answers 404 for an unknown $noun id instead of crashing",
    ),
    Request(
        "batching",
        "repository",
        "The nightly $noun aggregation takes forty minutes now. Profile it and batch the queries.",
        "batch",
        False,
        "$fn streams rows with yield_per instead of loading them all",
    ),
    Request(
        "validation",
        "validators",
        "Reject $noun payloads with a negative amount at the API boundary instead of deep "
        "in the $kind code.",
        "validation",
        True,
        "$fn rejects negative amounts up front with a ValidationError",
    ),
    Request(
        "limits",
        "limits",
        "Raise the per-account $noun limit to ${n}0000 for verified accounts only.",
        "limit",
        True,
        "$fn applies VERIFIED_LIMIT only to verified accounts",
    ),
)

# Lines an edit inserts, indented to the line they replace.
FIX_SNIPPETS: dict[str, tuple[str, ...]] = {
    "retry": (
        "delay = min(BACKOFF_BASE_S * 2**attempt, BACKOFF_CAP_S)",
        "await anyio.sleep(delay + self._jitter())",
    ),
    "rounding": (
        "exponent = Decimal(1).scaleb(-MINOR_UNITS.get(currency, 2))",
        "total = total.quantize(exponent, rounding=ROUND_HALF_EVEN)",
    ),
    "idempotency": (
        "if await uow.processed_events.contains(ctx.idempotency_key):",
        "    return ${Noun}Response.already_applied(ctx.idempotency_key)",
    ),
    "logging": ('logger.info("$fn", extra={"${noun}_id": ${noun}_id, "attempt": attempt})',),
    "timeout": ("timeout = self._settings.${noun}_timeout_s",),
    "clock": ("now = self._clock.now()  # injected so tests can freeze time",),
    "typing": ("items: list[$Noun] = []", "totals: dict[str, Decimal] = {}"),
    "currency": (
        "minor_units = MINOR_UNITS.get(currency, 2)",
        "exponent = Decimal(1).scaleb(-minor_units)",
    ),
    "dry_run": (
        "if dry_run:",
        '    logger.info("dry run: would process %d ${nouns}", len(chunk))',
        "    continue",
    ),
    "null_guard": (
        "if item is None:",
        '    raise HTTPException(status_code=404, detail="$noun not found")',
    ),
    "batch": ("rows = session.execute(query.execution_options(yield_per=$size)).scalars()",),
    "validation": (
        'if Decimal(str(payload.get("amount", 0))) < 0:',
        '    raise ValidationError("amount must not be negative")',
    ),
    "limit": ("limit = VERIFIED_LIMIT if account.verified else DEFAULT_LIMIT",),
    "test": ("# covers the $qualifier case reported in the ticket",),
}

# Lines a second attempt at a fix inserts.
FOLLOW_UPS: tuple[str, ...] = (
    "amount = Decimal(str(amount))  # JSON floats lose precision",
    "currency = currency.upper()",
    "items = list(items)  # a generator would be consumed twice",
    "session.flush()  # the next query must see the new row",
    "attempt_count = 0",
)

OPENING = (
    "You're working in the payhub repository: a Python payments service (FastAPI, "
    "SQLAlchemy, Postgres) with components for ledger entries, payouts, refunds, invoices, "
    "FX rates, webhooks and more. I'll hand you a series of tasks; keep each change small "
    "and run the relevant tests after it.\n\nFirst task: "
)

NEXT_TASK: tuple[str, ...] = (
    "Thanks. Next: ",
    "Great, that's merged. ",
    "Nice. ",
    "Ok, that's deployed. Next one: ",
    "Good. ",
    "",
    "Looks fine. Moving on: ",
    "Thanks, reviewed and approved. ",
)

NUDGES: tuple[str, ...] = (
    "go on",
    "Continue.",
    "ok",
    "Sounds right, go ahead.",
    "Yes, do that.",
    "Looks good so far, keep going.",
    "Keep the diff small, please.",
    "Don't change the public signature of $fn.",
    "Fine. Run the $domain tests after the change.",
    "Can you show me $path first?",
    "Ok, but make sure the JPY case still works.",
    "Please also check the callers of $fn.",
    "Go ahead, but no new dependencies.",
    "Makes sense. Continue.",
    "Why $fn and not its caller?",
    "Alright, what's next?",
    "Proceed.",
    "lgtm, continue",
    "Hold on - are you sure $path is the right place for this?",
    "Ok. This has to ship today, so no refactors beyond the fix.",
    "Good. Anything else in $domain that looks suspicious?",
    "Carry on.",
)

# Nudges that only make sense while a test is known to fail.
FAILING_NUDGES: tuple[str, ...] = (
    "Is this related to the failure in $test?",
    "What does $test actually check?",
    "Does $test fail locally too, or only on CI?",
    "Please make sure $test is green before you wrap up.",
)

ATTACHMENT_LINES: dict[str, tuple[str, ...]] = {
    "log": ("The CI log is attached.", "Full CI output attached."),
    "jsonl": ("I attached the production traces.", "Traces from prod are attached."),
    "csv": ("Last month's export is attached.", "Attached the export finance sent."),
    "markdown": ("The spec is attached.", "See the attached spec."),
    "image": ("Screenshot of the dashboard attached.", "Attached the Grafana panel."),
}

INTENT: dict[str, tuple[str, ...]] = {
    "read_file": (
        "Let me read $target to see how $fn is implemented.",
        "Opening $target; I want the full context around $fn before touching it.",
        "Reading $target first.",
    ),
    "read_tests": (
        "Reading the tests in $target to see what $fn is expected to do.",
        "Let me look at $target to see how $test sets up its data.",
    ),
    "grep": (
        "Searching the $domain component for every use of '$pattern'.",
        "Before changing $fn I want to know who calls it.",
        "Let me grep for '$pattern' to find the call sites.",
    ),
    "list_dir": (
        "Listing payhub/$domain/ to get the lay of the land.",
        "Let me see which modules payhub/$domain/ has.",
    ),
    "apply_patch": (
        "Applying the change to $path: $change.",
        "Editing $path now.",
        "Here is the edit to $fn.",
    ),
    "run_tests": (
        "Running the $domain tests.",
        "Re-running the tests to check the change.",
        "Let me run $target to see where we stand.",
    ),
}

INSIGHTS: tuple[str, ...] = (
    "It quantizes each line before summing, which is exactly where a cent can go missing.",
    "The retry loop swallows UpstreamTimeout but not connection resets.",
    "The $noun id is never logged, which is why the traces were hard to follow.",
    "It reads the wall clock directly, so anything near midnight UTC is timing-dependent.",
    "Validation happens after the row is locked, so a bad payload holds the lock for nothing.",
    "The helper it calls is shared with the nightly job, so the change must work for both.",
    "It loads every row into memory before aggregating; that explains the runtime.",
    "The handler assumes the lookup always succeeds and dereferences None otherwise.",
    "Minor units are hard-coded to 2 in one branch and looked up in the other.",
)

# Text-only messages, by the phase of the task they come up in.
REFLECTIONS: dict[str, tuple[str, ...]] = {
    "explore": (
        "Before editing anything I want the call graph clear: $fn is used by the HTTP "
        "handler and by the nightly job, so whatever I change has to work for both.",
        "Plan: (1) reproduce the problem with the $domain tests, (2) change $fn in $path, "
        "(3) add a case for $cur, (4) run the whole $domain suite.",
        "The $kind module mixes I/O and pure logic. I'll keep the change in the pure part "
        "so it is easy to test without a database.",
        "$test builds its data with the factory defaults, which is why it only fails for $cur.",
        "Nothing else in payhub/$domain/ depends on the current behaviour of $fn; only the "
        "$kind module and its tests import it.",
        "The existing tests cover the happy path only. I'll add one for the edge case once "
        "the change is in.",
        "There are no migrations involved; this is a pure code change.",
        "I considered doing this in the API layer, but the batch jobs bypass it, so the "
        "change belongs in $path.",
        "For context: $test checks $fn with a $cur amount and compares against a "
        "hand-computed Decimal, so it is sensitive to the rounding mode.",
        "$fn has grown a second responsibility over time; I'll leave that alone for now and "
        "keep this change focused.",
    ),
    "edit": (
        "I'm changing $fn rather than its callers: the problem is inside it, and every "
        "caller already expects the corrected behaviour.",
        "The diff stays small: a handful of lines in $path and no signature changes.",
        "One thing to watch: $fn is also imported by the reconciliation job, so its return "
        "type must stay the same.",
        "I'm keeping the old code path behind the same name so callers outside "
        "payhub/$domain/ keep working unchanged.",
        "The change only touches $fn; the $noun model and the API schema stay as they are.",
        "I'm not adding a dependency for this; the standard library is enough.",
    ),
    "verify": (
        "The remaining warnings are the known DeprecationWarning from the HTTP client and "
        "are unrelated to this change.",
        "The $domain suite is green locally. CI also runs the Postgres-backed tests, which "
        "exercise the same code path with real locking.",
        "I double-checked the $cur case by hand: with $minor minor units the result "
        "matches what $test expects.",
        "Coverage of $path went up slightly; the new branch in $fn is exercised by $test.",
        "No other component imports $fn, so the rest of the suite is not affected.",
    ),
}

REF_MENTIONS: tuple[str, ...] = (
    " This matches what $file_id showed ($summary).",
    " For reference, $file_id ($summary) points the same way.",
    " I cross-checked against $file_id: $summary.",
    " Consistent with the earlier attachment $file_id.",
)

WRAP_LEADS: tuple[str, ...] = (
    "Landing the change and running the tests once more.",
    "Final check before I call this done.",
    "One last test run.",
)

WRAP = Template(
    "Done: $task_short\n\nWhat changed:\n- $path: $change\n- $test_path: $test_change\n\n"
    "Verification: $verification$mention"
)


def fill(template: str, slots: Mapping[str, str]) -> str:
    """Fill ``template``; unknown placeholders are left as written."""
    return Template(template).safe_substitute(slots)


def pick(rng: random.Random, options: Sequence[str], slots: Mapping[str, str]) -> str:
    """Choose one template and fill it."""
    return fill(rng.choice(options), slots)
