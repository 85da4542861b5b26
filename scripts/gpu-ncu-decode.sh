set -u
eval "$(bash .gpu-deps/gpu-deps unpack)"
export AUTOGEMM_CACHE_DIR=/tmp/autogemm-cache
cmake --build build-gpu -j16 > $OUT/build.log 2>&1 || { tail -30 $OUT/build.log; exit 1; }
b=build-gpu/src/cli/autogemm
for c in "64 2112 7168|64x16x64 s8 c1 ws p g8 cl1x2/a tma/tma" "64 2112 7168|64x128x64 s8 c1 ws p g8 tma/tma sk8" "4096 32768 512|128x256x64 s3 c2 ws p g8 tma/tma"; do
  IFS='|' read -r shape cfg <<< "$c"; set -- $shape
  echo "== $shape $cfg"
  $b bench --m $1 --n $2 --k $3 --config "$cfg" --iters 10 --csv /tmp/x.csv > /dev/null 2>&1; tail -1 /tmp/x.csv
  timeout 120 ncu --clock-control none --launch-skip 12 --launch-count 6 --metrics gpu__time_duration.sum $b bench --m $1 --n $2 --k $3 --config "$cfg" --iters 4 --warmup 2 2>&1 | grep -E "autogemm_split|gemm_kernel|Lt|sm90|gpu__time_duration|==PROF==" | grep -v "^==PROF== Profiling" | head -24
done
