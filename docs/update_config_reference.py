"""Regenerate the configuration reference in docs/operations.md from ``controller.config``.

    .venv/bin/python docs/update_config_reference.py

The reference sits between ``<!-- config-reference:begin -->`` and ``<!-- config-reference:end
-->``; tests/unit/test_deploy.py fails while it differs from the settings table.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from controller.config import render_config_reference

BEGIN, END = "<!-- config-reference:begin -->\n", "<!-- config-reference:end -->"
DOC = Path(__file__).resolve().parent / "operations.md"


def main() -> int:
    text = DOC.read_text()
    if BEGIN not in text or END not in text:
        print(f"{DOC}: markers not found", file=sys.stderr)
        return 1
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    body = render_config_reference().replace("# zk-controller configuration reference\n\n", "", 1)
    DOC.write_text(f"{head}{BEGIN}{body}{END}{tail}")
    print(f"updated {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
