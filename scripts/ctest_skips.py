#!/usr/bin/env python3
"""Why CTest skipped what it skipped: CTest prints "(Skipped)" after a test's name and nothing
else, so a machine without a GPU showed a hundred GPU tests skipped without a reason. Reads the
JUnit file `ctest --output-junit FILE` wrote and prints each reason a skipped GoogleTest gave
(the lines after its "Skipped"), once, with how many tests gave it and the first few names.

    python3 scripts/ctest_skips.py build/ctest-junit.xml
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ElementTree
from collections import OrderedDict

SHOWN_NAMES = 3


def skip_reason(output: str) -> str:
    """GoogleTest's skip message: the lines between "<file>:<line>: Skipped" and "[  SKIPPED ]"."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            reason = []
            for rest in lines[i + 1:]:
                if rest.startswith("[  SKIPPED ]"):
                    break
                reason.append(rest.strip())
            return " ".join(part for part in reason if part) or "no reason given"
    return "no reason given"


def main(path: str) -> int:
    reasons: OrderedDict[str, list[str]] = OrderedDict()
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        if case.find("skipped") is None:
            continue
        out = case.find("system-out")
        reason = skip_reason(out.text if out is not None and out.text else "")
        reasons.setdefault(reason, []).append(case.get("name", "?"))
    for reason, names in reasons.items():
        more = f" and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
        print(f"skipped: {len(names)} test{'s' if len(names) != 1 else ''}: {reason}")
        print(f"         ({', '.join(names[:SHOWN_NAMES])}{more})")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: ctest_skips.py JUNIT_FILE")
    sys.exit(main(sys.argv[1]))
