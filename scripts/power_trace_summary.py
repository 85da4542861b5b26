#!/usr/bin/env python3
"""Per-phase summary of an nvidia-smi power trace (scripts/gpu-power-trace.sh).

usage: power_trace_summary.py TRACE.csv PHASES.txt

TRACE.csv: `nvidia-smi --query-gpu=timestamp,power.draw,... --format=csv -lms N`.
PHASES.txt: one `name|start|end` line per phase, times in nvidia-smi's timestamp format
(YYYY/MM/DD HH:MM:SS.mmm), which sorts as text.

A sample is busy when its power is at least 40% of the enforced limit: a phase also holds
its process's start-up (random inputs, quantisation), which is not what we want to describe.
"""
import csv
import statistics
import sys


def number(text):
    """'698.52 W' -> 698.52; '[N/A]' or '' -> None."""
    try:
        return float(text.strip().split()[0])
    except (ValueError, IndexError):
        return None


def column(header, name):
    """Index of the first column whose header starts with `name` (units follow in brackets)."""
    for i, h in enumerate(header):
        if h.strip().split(" [")[0] == name:
            return i
    return None


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * (len(values) - 1) + 0.5))]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1], newline="") as f:
        rows = [r for r in csv.reader(f) if r]
    header, samples = rows[0], rows[1:]
    c_time = column(header, "timestamp")
    c_power = column(header, "power.draw.instant")
    if c_power is None:
        c_power = column(header, "power.draw")
    c_limit = column(header, "enforced.power.limit")
    c_clock = column(header, "clocks.current.sm")
    if c_clock is None:
        c_clock = column(header, "clocks.sm")
    c_temp = column(header, "temperature.gpu")
    reasons = [(name, column(header, f"{prefix}.{name}"))
               for name in ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown")
               for prefix in ("clocks_event_reasons", "clocks_throttle_reasons")]
    reasons = [(name, c) for name, c in reasons if c is not None]
    samples = [s for s in samples if len(s) == len(header)]

    print(f"{'phase':22} {'busy/all':>9} {'power W p10/p50/p90':>22} {'limit W':>8} "
          f"{'SM MHz p10/p50/p90':>20} {'max C':>6}  share of busy samples with the reason")
    with open(sys.argv[2]) as f:
        phases = [line.strip().split("|") for line in f if line.strip()]
    for name, start, end in phases:
        inside = [s for s in samples if start <= s[c_time].strip() <= end]
        limits = [number(s[c_limit]) for s in inside if number(s[c_limit])]
        limit = statistics.median(limits) if limits else None
        busy = [s for s in inside
                if limit and number(s[c_power]) is not None and number(s[c_power]) >= 0.4 * limit]
        shown = busy if busy else inside
        if not shown:
            print(f"{name:22} no samples")
            continue
        power = [number(s[c_power]) for s in shown if number(s[c_power]) is not None]
        clock = [number(s[c_clock]) for s in shown if number(s[c_clock]) is not None]
        temp = [number(s[c_temp]) for s in shown if number(s[c_temp]) is not None]
        why = ", ".join(
            f"{reason} {100.0 * sum(s[c].strip() == 'Active' for s in shown) / len(shown):.0f}%"
            for reason, c in reasons)
        print(f"{name:22} {len(busy):4}/{len(inside):<4} "
              f"{percentile(power, 0.1):6.0f} {percentile(power, 0.5):6.0f} "
              f"{percentile(power, 0.9):6.0f}   {limit or 0:6.0f}  "
              f"{percentile(clock, 0.1):6.0f} {percentile(clock, 0.5):6.0f} "
              f"{percentile(clock, 0.9):6.0f} {max(temp) if temp else 0:6.0f}  {why}")


if __name__ == "__main__":
    main()
