"""Write the latest benchmark figures into README.md, between its bench markers.

    python -m bench.readme      # after `make bench`

The table is made from bench/results/latest.json, so the README shows measured
figures and the machine they came from, never numbers typed by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def table(results: dict) -> str:
    m = results["machine"]
    lines = [
        f"Measured on {m['date']}: {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
        f"NumPy {m['numpy']}.",
        "",
    ]
    if "notebooks" in results:
        lines += ["| lesson | Run All | kernel peak memory |", "| --- | ---: | ---: |"]
        for name, r in results["notebooks"].items():
            lines.append(f"| `{name}` | {r['seconds']:.1f} s | {r['peak_rss_mb']:.0f} MB |")
        total = sum(r["seconds"] for r in results["notebooks"].values())
        lines += [f"| **all lessons** | **{total:.1f} s** | |", ""]
    if "widgets" in results:
        lines += ["| widget | median | 95th percentile |", "| --- | ---: | ---: |"]
        for name, r in results["widgets"].items():
            lines.append(f"| `{name}` | {r['median_ms']:.1f} ms | {r['p95_ms']:.1f} ms |")
        lines.append("")
    if "attention" in results:
        a = results["attention"]
        lines += [
            "| `attention`, float32, d = 64 | time | × its two matrix products |",
            "| --- | ---: | ---: |",
        ]
        for r in a["attention"]:
            lines.append(
                f"| n = {r['n']} | {r['attention_ms']:.1f} ms | {r['ratio_to_matmuls']:.2f} |"
            )
        t = a["tiled"]
        lines += [
            "",
            f"`tiled_attention` at n = 4096 takes {t['ratio_to_attention_n4096']:.2f}× "
            f"the time of `attention`; for 8192 queries × 32768 keys it allocates at most "
            f"{t['peak_mb_8192x32768']:.0f} MB, where the score matrix alone would be "
            f"{t['score_matrix_mb_8192x32768']:.0f} MB. `import attnlab` takes "
            f"{a['import_ms']:.0f} ms.",
        ]
    return "\n".join(lines)


def main() -> None:
    results = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    readme = ROOT / "README.md"
    text = readme.read_text()
    block = f"{START}\n{table(results)}\n{END}"
    new, count = re.subn(
        re.escape(START) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S
    )
    if not count:
        raise SystemExit(f"README.md has no {START} ... {END} block")
    readme.write_text(new)
    print("README.md: benchmark table updated")


if __name__ == "__main__":
    main()
