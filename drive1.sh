#!/usr/bin/env bash
# device call 1: build, band-signal GPU tests, TP tests, A/B reduce-scatter & all-reduce, traces
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
REAL_OUT=$OUT
export OUT=/tmp/o1; mkdir -p $OUT
start=$(date +%s)
t() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a $OUT/driver.log; }
t "build"
timeout 300 scripts/gpu-run.sh profile > $OUT/build-stdout.log 2>&1; t "build rc $?"
timeout 200 scripts/gpu-tp.sh tests > $OUT/tp-tests-stdout.log 2>&1; t "tp tests rc $?"; cp $OUT/tp.log $OUT/tp-tests-tp.log
source scripts/gpu-env.sh
timeout 120 build-gpu/tests/autogemm_tests --gtest_filter="BandSignalsGpu*:KernelCompile.RowBand*" > $OUT/band.log 2>&1; t "band rc $?"
t "band tests done"; tail -5 $OUT/band.log
PATTERNS="reduce-scatter all-reduce" ROUNDS=1 ITERS=10 BEFORE=build-before timeout 260 scripts/gpu-tp.sh ab > $OUT/ab-stdout.log 2>&1; t "ab rc $?"; cp $OUT/tp.log $OUT/tp-ab-tp.log
cat $OUT/tp-ab.log
TRACES="all-reduce:16384x16384x16384 all-reduce:8192x28672x8192" TRACE_CALLS=2 TRACE_ITERS=1 timeout 100 scripts/gpu-tp.sh trace > $OUT/trace-stdout.log 2>&1; t "trace rc $?"
tar -czf $REAL_OUT/o1.tgz -C /tmp o1
