#!/usr/bin/env python3
"""Summarises a tile trace (AUTOGEMM_TRACE_TILES=<file>, docs/env-vars.md).

For each traced call (by default the last one of each problem and configuration; a fused
epilogue's configuration ends in "epi:<token>", so a bench row's plain calls are apart), prints the
kernel's span and, per round r (the r-th work item of every CTA), how many CTAs ran one, when
the round's items started and ended (min / max over CTAs, us from the kernel's first start) and
their mean duration: how far the persistent CTAs drift apart wave by wave, and what the last,
partial round costs.
    scripts/tile_trace_summary.py trace.csv [--all-calls]
"""
import argparse
import csv
import statistics
from collections import defaultdict


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("--all-calls", action="store_true", help="every call, not the last one")
    args = parser.parse_args()

    # Call numbers count within one process; several processes may append to one file, so a
    # call is (problem, configuration, call number).
    calls = defaultdict(list)
    for row in csv.DictReader(open(args.trace)):
        calls[(row["m"], row["n"], row["k"], row["config"], int(row["call"]))].append(row)
    last = {}
    for key in calls:
        if key[:4] not in last or key[4] > last[key[:4]][4]:
            last[key[:4]] = key
    chosen = list(calls) if args.all_calls else list(last.values())

    for call in chosen:
        rows = calls[call]
        r0 = rows[0]
        start = min(int(r["start_ns"]) for r in rows)
        end = max(int(r["end_ns"]) for r in rows)
        ctas = {r["cta"] for r in rows}
        print(f"call {call[4]}: {r0['m']}x{r0['n']}x{r0['k']}  {r0['config']}")
        print(f"  span {(end - start) / 1e3:.1f} us, {len(ctas)} CTAs, {len(rows)} work items "
              f"({sum(r['partial'] == '1' for r in rows)} items that stored no D: split-K splits or stream-K pieces)")
        rounds = defaultdict(list)
        for r in rows:
            rounds[int(r["item"])].append(r)
        print("  round  ctas  partial  start min..max (us)  end min..max (us)  mean duration (us)")
        for item, rs in sorted(rounds.items()):
            s = [(int(r["start_ns"]) - start) / 1e3 for r in rs]
            e = [(int(r["end_ns"]) - start) / 1e3 for r in rs]
            d = statistics.mean(b - a for a, b in zip(s, e))
            partial = sum(r["partial"] == "1" for r in rs)
            print(f"  {item:5d} {len(rs):5d} {partial:8d}  {min(s):8.1f} .. {max(s):8.1f}"
                  f"  {min(e):8.1f} .. {max(e):8.1f}  {d:10.1f}")
        # Per CTA: when its whole tiles were done, and when it finished.
        whole_done, finished = [], []
        by_cta = defaultdict(list)
        for r in rows:
            by_cta[r["cta"]].append(r)
        for rs in by_cta.values():
            whole = [int(r["end_ns"]) for r in rs if r["partial"] == "0"]
            if whole:
                whole_done.append((max(whole) - start) / 1e3)
            finished.append((max(int(r["end_ns"]) for r in rs) - start) / 1e3)
        if whole_done:
            print(f"  whole tiles done per CTA: min {min(whole_done):.1f}, median "
                  f"{statistics.median(whole_done):.1f}, max {max(whole_done):.1f} us")
        print(f"  CTA finished: min {min(finished):.1f}, median {statistics.median(finished):.1f},"
              f" max {max(finished):.1f} us")
        print_phases(rows)


def print_phases(rows):
    """Where a whole tile's time goes, from the SM-cycle stamps: waiting for its first k-block,
    the main loop, and the epilogue; in cycles and in us at the clock the records imply."""
    whole = [r for r in rows if r["partial"] == "0" and "cycles" in r and int(r["cycles"]) > 0]
    if not whole:
        return
    first = [int(r["first_data_cycles"]) for r in whole]
    loop = [int(r["main_loop_cycles"]) - int(r["first_data_cycles"]) for r in whole]
    epilogue = [int(r["cycles"]) - int(r["main_loop_cycles"]) for r in whole]
    k_blocks = [int(r["k_last"]) - int(r["k_first"]) for r in whole]
    span_ns = sum(int(r["end_ns"]) - int(r["start_ns"]) for r in whole)
    mhz = 1e3 * sum(int(r["cycles"]) for r in whole) / span_ns if span_ns > 0 else 0.0
    us = (lambda c: c / mhz) if mhz > 0 else (lambda c: float("nan"))
    print(f"  whole tiles ({len(whole)}), mean cycles at {mhz:.0f} MHz:"
          f" first data {statistics.mean(first):.0f} ({us(statistics.mean(first)):.2f} us),"
          f" main loop {statistics.mean(loop):.0f} ({us(statistics.mean(loop)):.2f} us,"
          f" {statistics.mean(l / k for l, k in zip(loop, k_blocks)):.0f} per k-block),"
          f" epilogue {statistics.mean(epilogue):.0f} ({us(statistics.mean(epilogue)):.2f} us)")
    print(f"    first data median {statistics.median(first):.0f}, max {max(first)};"
          f" epilogue median {statistics.median(epilogue):.0f}, max {max(epilogue)}")


if __name__ == "__main__":
    main()
