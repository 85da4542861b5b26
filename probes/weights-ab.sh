#!/usr/bin/env bash
# Experiment, one device call (about 10 minutes on a cold H200, builds included): this tree
# against a baseline tree on the weight-only suites at the planner's choice. The decode suite for
# each format, then the MoE decode suite (int4-g128). Files in $OUT: ab-*.txt (the runs' lines),
# FORMAT/*.csv (each row's time, config, diff and share of the read). The two 16-row tiles of B
# a warp (plan/rules.hpp decode_row_tiles) were decided from its run.
#   BEFORE=<baseline source tree, e.g. git archive main> probes/weights-ab.sh
#   FORMATS="int4-g128 mxfp4" ROUNDS=2 probes/weights-ab.sh   (default: all four, one round)
source "$(dirname "$0")/ab_util.sh"
AB_TIMEOUT=240
for format in ${FORMATS:-int4-g128 int4-g128-zp mxfp4 int8}; do
  ab "$format" ROUNDS="${ROUNDS:-1}" DTYPES=bf16 SUITE=bench/suites/gemm-decode.csv \
    BENCH_ARGS="--weights $format"
done
ab moe-int4-g128 ROUNDS="${ROUNDS:-1}" DTYPES=bf16 ROWS=--grouped \
  SUITE=bench/suites/grouped-moe-decode.csv BENCH_ARGS="--weights int4-g128"
