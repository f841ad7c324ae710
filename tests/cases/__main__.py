"""Write every case's `expected.json` from the engine (review the diff before committing).

.venv/bin/python -m tests.cases
"""

from __future__ import annotations

from tests.cases import CASES, load_cases, report_text


def main() -> None:
    changed = 0
    for case in load_cases():
        text = report_text(case)
        if text != case.expected_text:
            (CASES / case.kind / case.name / "expected.json").write_text(text, encoding="utf-8")
            changed += 1
            print(f"wrote {case.id}/expected.json")
    print(f"{changed} expected report(s) written")


if __name__ == "__main__":
    main()
