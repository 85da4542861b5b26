#!/usr/bin/env python3
"""Summarise Nsight Compute's source page (--page source --csv --print-source sass).

  scripts/ncu_sass_summary.py ncu-fp8-sass.csv [--listing FILE]

Prints where the warp-stall samples fall by instruction class (integer ALU, promotion FFMA,
wgmma issue and wait, barrier waits, ...) and, with --listing, writes every SASS instruction
with its samples and top stall reasons.
"""
import argparse
import collections
import csv
import re


def classify(src, prev, phasechk_preds):
    words = src.split()
    op = words[1] if src.startswith('@') and len(words) > 1 else (words[0] if words else '')
    guard = words[0].lstrip('@!') if src.startswith('@') else ''
    if 'UCGABAR' in src or 'ERRBAR' in src:
        return 'idle warps / teardown (cluster barrier)'
    # The branch that retries a try_wait tests the predicate the SYNCS.PHASECHK wrote, which
    # the scheduler may place several instructions later.
    if 'SYNCS.PHASECHK' in src or 'NANOSLEEP' in src or (op == 'BRA' and guard in phasechk_preds):
        return 'mbarrier wait loop'
    if op.startswith('BAR.SYNC') or op.startswith('BAR.ARV'):
        return 'named barrier (turns, epilogue)'
    if 'DEPBAR' in src:
        return 'wgmma wait'
    if 'GMMA' in src:
        return 'wgmma issue'
    if op in ('FFMA', 'FADD'):
        return 'promotion FFMA'
    if op == 'FMUL':
        return 'scale FMUL'
    if op.startswith('LDG'):
        return 'global load'
    if op.startswith('LDS') or op.startswith('LDSM'):
        return 'shared load'
    if op.startswith(('STS', 'STSM', 'UTMA', 'BAR', 'SYNCS.ARRIVE', 'LDGSTS')):
        return 'stores / TMA / barriers'
    return 'other integer / uniform'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('csv')
    ap.add_argument('--listing')
    args = ap.parse_args()
    rows = list(csv.reader(open(args.csv)))
    header_row = next(i for i, r in enumerate(rows) if 'Source' in r and 'Address' in r)
    hdr, data = rows[header_row], rows[header_row + 1:]
    i_samples = hdr.index('Warp Stall Sampling (All Samples)')
    i_src = hdr.index('Source')
    i_exec = hdr.index('Instructions Executed')
    reasons = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
    classes = collections.Counter()
    listing = []
    prev = ''
    phasechk_preds = set()   # predicates a SYNCS.PHASECHK wrote last (P0..P6)
    for j, r in enumerate(data):
        if len(r) <= i_samples:
            continue
        n = int(r[i_samples] or 0)
        src = r[i_src].strip()
        classes[classify(src, prev, phasechk_preds)] += n
        # Track which predicates a PHASECHK wrote last (listing order approximates the flow).
        words = src.split()
        body = words[1:] if src.startswith('@') else words
        if len(body) > 1 and re.fullmatch(r'P[0-6],', body[1]):
            if body[0].startswith('SYNCS.PHASECHK'):
                phasechk_preds.add(body[1][:-1])
            else:
                phasechk_preds.discard(body[1][:-1])
        top = sorted(((int(r[hdr.index(c)] or 0), c[6:]) for c in reasons), reverse=True)[:2]
        listing.append(f"{j:5d} {n:6d} {r[i_exec]:>8s} {src[:80]:80s} "
                       + ' '.join(f'{c}:{v}' for v, c in top if v))
        prev = src
    total = sum(classes.values()) or 1
    print(f"{'instruction class':42s} {'samples':>8s} {'share':>7s}")
    for k, v in classes.most_common():
        print(f"{k:42s} {v:8d} {100 * v / total:6.1f}%")
    if args.listing:
        open(args.listing, 'w').write('\n'.join(listing) + '\n')


if __name__ == '__main__':
    main()
