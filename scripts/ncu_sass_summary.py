#!/usr/bin/env python3
"""Summarise Nsight Compute's source page (--page source --csv --print-source sass).

  scripts/ncu_sass_summary.py ncu-fp8-sass.csv [--listing FILE]

Prints where the warp-stall samples fall by instruction class (the table in notes.md section
13) and, with --listing, writes every SASS instruction with its samples and top stall reasons.
"""
import argparse
import collections
import csv


def classify(src, prev):
    words = src.split()
    op = words[1] if src.startswith('@') and len(words) > 1 else (words[0] if words else '')
    if 'UCGABAR' in src or 'ERRBAR' in src:
        return 'idle warps / teardown (cluster barrier)'
    if 'SYNCS.PHASECHK' in src or 'NANOSLEEP' in src or (op == 'BRA' and 'TRYWAIT' in prev):
        return 'mbarrier wait loop'
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
    for j, r in enumerate(data):
        if len(r) <= i_samples:
            continue
        n = int(r[i_samples] or 0)
        src = r[i_src].strip()
        classes[classify(src, prev)] += n
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
