"""Write the latest benchmark figures into README.md, between its bench markers.

    python -m bench.readme      # after `make bench`

The table is made from bench/results/latest.json, so the README shows measured
figures and the machine they came from, never numbers typed by hand.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from .__main__ import describe

ROOT = Path(__file__).resolve().parents[1]
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def table(results: dict) -> str:
    m = results["machine"]
    lines = [f"Measured on {m['date']}: {describe(m)}.", ""]
    if "notebooks" in results:
        lines += [
            "| lesson | Run All | peak memory (kernel + worker, at most) |",
            "| --- | ---: | ---: |",
        ]
        for name, r in results["notebooks"].items():
            torch = ", PyTorch imported" if r.get("imports_torch") else ""
            lines.append(f"| `{name}` | {r['seconds']:.1f} s | {r['peak_rss_mb']:.0f} MB{torch} |")
        total = sum(r["seconds"] for r in results["notebooks"].values())
        lines += [f"| **all lessons** | **{total:.1f} s** | |", ""]
    if "widgets" in results:
        lines += ["| widget | median | 95th percentile |", "| --- | ---: | ---: |"]
        for name, r in results["widgets"].items():
            lines.append(f"| `{name}` | {r['median_ms']:.1f} ms | {r['p95_ms']:.1f} ms |")
        lines.append("")
    if "attention" in results:
        a = results["attention"]
        m = results.get("measured_on", {}).get("attention", m)
        torch = a.get("torch")
        lines += [
            f"`attnlab.fast.attention`, float32, d = 64, {a.get('threads', '?')} threads, "
            f"on {m['cpu']}"
            + (f", against torch {torch['torch']} with {torch['threads']} threads" if torch else "")
            + ":",
            "",
            "| n | fast path | × its two matrix products | × torch SDPA | readable `attention` |",
            "| --- | ---: | ---: | ---: | ---: |",
        ]
        for r in a["attention"]:
            vs_torch = f"{r['ratio_to_torch']:.2f}" if "ratio_to_torch" in r else "–"
            readable = f"{r['readable_ms']:.1f} ms" if "readable_ms" in r else "–"
            lines.append(
                f"| {r['n']} | {r['attention_ms']:.1f} ms | {r['ratio_to_matmuls']:.2f} "
                f"| {vs_torch} | {readable} |"
            )
        off = a.get("without_avx512")
        if off and off.get("disabled"):
            lines += [
                "",
                f"With NumPy's AVX-512 paths disabled (`NPY_DISABLE_CPU_FEATURES="
                f'"{" ".join(off["disabled"])}"`), n = {off["n"]}: {off["attention_ms"]:.1f} ms, '
                f"{off['ratio_to_matmuls']:.2f}× its matrix products"
                + (f", {off['ratio_to_torch']:.2f}× torch" if "ratio_to_torch" in off else "")
                + ".",
            ]
        elif off:
            lines += ["", f"Without AVX-512: {off['note']}."]
        t = a["tiled"]
        lines += [
            "",
            f"`tiled_attention` at n = 4096 takes {t['ratio_to_attention_n4096']:.2f}× "
            f"the time of the fast path; for 8192 queries × 32768 keys it allocates at most "
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
