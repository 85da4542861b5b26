#pragma once
// Time to move data between GPUs over a Topology, by the algorithm NCCL runs for each pattern.
// Pure. Bytes are the whole tensor's (what NCCL's count x element size covers), times in us;
// every function returns 0 for one GPU or no bytes.
//
// The formulas (Thakur, Rabenseifner and Gropp, "Optimization of Collective Communication
// Operations in MPICH", 2005; NCCL's ring and chain algorithms), with B the slowest link of the
// ring, L its latency per step, S the tensor, G the GPUs:
//   ring all-gather, reduce-scatter:  (G-1) L + (G-1)/G S / B
//   ring all-reduce:                  2 (G-1) L + 2 (G-1)/G S / B
//   pipelined chain broadcast/reduce: (G-1) L + S / B     (the pieces stream through every link)
//   gather to / scatter from a root:  L_root + S_moved / B_root (every byte not the root's own
//                                     crosses the root's link)
// plus, once per NCCL operation, kNcclCallUs: its kernel's launch and the handshake between the
// peers, which the per-step latency does not cover.
#include "autogemm/multi_gpu.hpp"

namespace autogemm::multi {

// The fixed cost of one NCCL operation, however small: nccl-tests report 10-20 us for the
// smallest messages on NVLink systems (all-reduce of 8 bytes); 10 us is taken. An assumption
// to check against the GPU run (scripts/gpu-multi.sh prints predicted against measured).
inline constexpr double kNcclCallUs = 10.0;

// bytes at gbps (1e9 bytes/s), in us; 0 for no bytes or an infinite bandwidth.
double transfer_us(double bytes, double gbps);

double ring_all_gather_us(double bytes, const Topology& t);
double ring_reduce_scatter_us(double bytes, const Topology& t);
double ring_all_reduce_us(double bytes, const Topology& t);
double chain_broadcast_us(double bytes, const Topology& t);
double chain_reduce_us(double bytes, const Topology& t);
// `moved`: the bytes that cross the root's link (those of the other GPUs' parts).
double root_gather_us(double moved, const Topology& t, int root = 0);
double root_scatter_us(double moved, const Topology& t, int root = 0);

}  // namespace autogemm::multi
