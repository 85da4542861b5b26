#!/usr/bin/env python3
"""Writes the scheduler's GEMM lists, bench/suites/schedule-64.csv and schedule-512.csv, from
the public suites (rules in each file's header). Run from the repository root; the files are
checked in, so this only needs running when a suite changes."""
import csv
import os


def rows(path):
    with open(path) as f:
        return [r for r in csv.DictReader(line for line in f if not line.startswith("#"))]


public = rows("bench/suites/gemm-public.csv")
decode = rows("bench/suites/gemm-decode.csv")
partial = rows("bench/suites/gemm-partial-wave.csv")

# 64: the list issue 53's figures were measured on (`--suite gemm-public.csv,gemm-decode.csv
# --count 64`): the public suite's 20 rows, the decode suite's 25, then the first 19 again.
both = public + decode
list64 = [both[i % len(both)] for i in range(64)]

# 512: decode rows (M <= 128: the public suite's 12 and the decode suite's 25, 37 in all) and
# prefill rows (M >= 400: the public suite's 8, the partial-wave suite's 10, 18 in all), as
# serving steps: 8 steps, each the 37 decode rows then the next 27 prefill rows in turn
# (8 x 37 = 296 decode, 8 x 27 = 216 prefill = each prefill row 12 times).
dec = [r for r in public if int(r["m"]) <= 128] + decode
pre = [r for r in public if int(r["m"]) >= 400] + partial
list512 = []
for step in range(8):
    list512 += dec
    list512 += [pre[(step * 27 + i) % len(pre)] for i in range(27)]
assert len(dec) == 37 and len(pre) == 18 and len(list512) == 512

headers = {
    "schedule-64.csv": """# The scheduler's 64-GEMM list (issue 53): gemm-public.csv's 20 rows, gemm-decode.csv's 25,
# then the first 19 again (what `--suite gemm-public.csv,gemm-decode.csv --count 64` gives).
# Written by scripts/make_schedule_lists.py.
""",
    "schedule-512.csv": """# The scheduler's 512-GEMM list (issue 53), decode and prefill mixed as serving steps: 8
# steps, each gemm-public.csv's 12 rows with M <= 128 and gemm-decode.csv's 25 (37 decode
# rows), then the next 27 of the 18 prefill rows in turn (gemm-public.csv's 8 with M >= 4096,
# gemm-partial-wave.csv's 10): 296 decode and 216 prefill GEMMs, each prefill row 12 times.
# Written by scripts/make_schedule_lists.py.
""",
}
for name, items in (("schedule-64.csv", list64), ("schedule-512.csv", list512)):
    with open(os.path.join("bench/suites", name), "w") as f:
        f.write(headers[name])
        f.write("m,n,k,tag\n")
        for r in items:
            f.write(f'{r["m"]},{r["n"]},{r["k"]},{r["tag"]}\n')
