"""``scripts/screenshot``: the viewer's page as the README shows it.

A sample database is written by real sessions (:mod:`lossless.demo.viewer_sample`),
served from 127.0.0.1, and a headless Chromium opens the agent's session at a
request that holds summaries and pruned tool outputs: the stacked bar of its parts
against the budget, the arena's zones, and what it sent in order.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

__all__ = ["main", "take"]

WIDTH, HEIGHT = 1400, 900


def take(out: Path) -> Path:
    """Writes the screenshot to ``out``; returns it."""
    from lossless.demo.viewer_sample import make_sample
    from lossless.events import EventName
    from lossless.store import Store
    from lossless.testing.browser import Browser
    from lossless.ui import running

    with tempfile.TemporaryDirectory() as scratch:
        db = Path(scratch) / "sample.db"
        sample = make_sample(db)
        store = Store(db, read_only=True)
        rows = store.events_page(sample.agent, name=EventName.REQUEST_BUILT.value, limit=9_999)
        shown = [
            row
            for row in rows
            if '["s",' in row.payload_json and json.loads(row.payload_json).get("pruned")
        ]
        event = (shown or rows)[-1].seq
        store.native.close()
        with running(db) as address, Browser(width=WIDTH, height=HEIGHT) as browser:
            page = browser.new_page()
            page.goto(f"{address}#/s/{sample.agent}/request/{event}", wait_for="#budget-bar")
            page.wait_for(f'#sessions li[data-id="{sample.agent}"].current')
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(out)
            if page.console_errors:
                raise RuntimeError(f"the page logged errors: {page.console_errors}")
    return out


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/ui.png")
    print(f"wrote {take(out)}")


if __name__ == "__main__":
    main()
