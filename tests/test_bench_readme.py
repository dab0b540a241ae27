"""The README's figure table names the machine, torch's threads and the AVX-512 case."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/ is not installed

from bench import readme

MACHINE = {
    "cpu": "Example CPU 9000",
    "cores": 2,
    "simd": "X86_V4",
    "avx512": True,
    "blas": "scipy-openblas 0.3",
    "python": "3.11.7",
    "numpy": "2.4.6",
    "date": "2026-01-01",
}


def results(without_avx512, torch=True):
    row = {"n": 2048, "attention_ms": 12.0, "matmuls_ms": 8.0, "ratio_to_matmuls": 1.5}
    row |= {"readable_ms": 30.0}
    if torch:
        row |= {"torch_ms": 10.0, "ratio_to_torch": 1.2}
    return {
        "machine": MACHINE,
        "attention": {
            "attention": [row],
            "threads": 2,
            "torch": {"torch": "2.13.0", "threads": 2} if torch else None,
            "without_avx512": without_avx512,
            "tiled": {
                "ratio_to_attention_n4096": 1.5,
                "peak_mb_8192x32768": 8.0,
                "score_matrix_mb_8192x32768": 1074.0,
            },
            "import_ms": 60.0,
        },
    }


def test_table_names_the_cpu_simd_and_torch_threads():
    off = {"disabled": ["X86_V4"], "n": 2048, "attention_ms": 14.0, "ratio_to_matmuls": 1.6}
    text = readme.table(results(off | {"ratio_to_torch": 1.4}))
    assert "Example CPU 9000, 2 cores, NumPy SIMD X86_V4 (with AVX-512)" in text
    assert "on Example CPU 9000, against torch 2.13.0 with 2 threads" in text
    assert "| 2048 | 12.0 ms | 1.50 | 1.20 | 30.0 ms |" in text
    assert 'NPY_DISABLE_CPU_FEATURES="X86_V4"`), n = 2048: 14.0 ms, 1.60×' in text
    assert "1.40× torch" in text


def test_table_says_when_there_is_no_avx512_and_no_torch():
    note = "this CPU has no AVX-512; NumPy already runs without it"
    text = readme.table(results({"disabled": [], "note": note}, torch=False))
    assert f"Without AVX-512: {note}." in text
    assert "torch" not in text.split("|")[0] and "| 2048 | 12.0 ms | 1.50 | – | 30.0 ms |" in text
