#pragma once
// Parameters of the L2 flush kernel (l2_flush.cuh), shared by the host (src/bench/timing.cpp)
// and NVRTC: plain C types only.
struct L2FlushParams {
  const unsigned* data;       // buffer read from start to end, several times the L2
  long long words;            // 32-bit words in the buffer, a multiple of 4
  unsigned* sink;             // written only if the read XOR equals `never`: keeps the loads
  unsigned never;
};
