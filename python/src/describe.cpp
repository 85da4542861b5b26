// The planner's and profiler's values as Python dictionaries, with the keys of
// `autogemm profile --json` and `autogemm plan --json` (src/hw/device_json.cpp,
// src/cli/cli_common.cpp), so a script reads either the same way.
#include <string>

#include "binding.hpp"

namespace autogemm::python {

namespace {

template <typename T>
nb::list list_of(const std::vector<T>& values) {
  nb::list out;
  for (const T& v : values) out.append(v);
  return out;
}

nb::dict capabilities_dict(const ArchCapabilities& c) {
  nb::dict d;
  d["arch_name"] = c.arch_name;
  d["mma_sync_f16_bf16"] = c.mma_sync_f16_bf16;
  d["fp8_tensor_cores"] = c.fp8_tensor_cores;
  d["fp4_tensor_cores"] = c.fp4_tensor_cores;
  d["wgmma"] = c.wgmma;
  d["tcgen05"] = c.tcgen05;
  d["tensor_memory"] = c.tensor_memory;
  d["tma"] = c.tma;
  d["clusters"] = c.clusters;
  d["setmaxnreg"] = c.setmaxnreg;
  d["smem_per_sm_bytes"] = c.smem_per_sm_bytes;
  d["smem_per_block_optin_bytes"] = c.smem_per_block_optin_bytes;
  d["max_cluster_portable"] = c.max_cluster_portable;
  d["max_cluster_nonportable"] = c.max_cluster_nonportable;
  d["dense_bf16_flops_per_clock_per_sm"] = c.dense_bf16_flops_per_clock_per_sm;
  d["dense_fp8_flops_per_clock_per_sm"] = c.dense_fp8_flops_per_clock_per_sm;
  return d;
}

std::string dtype_name(const GemmProblem& p) {
  if (p.a_type == DType::e4m3 || p.a_type == DType::e5m2) return "fp8";
  return std::string(to_string(p.a_type));
}

}  // namespace

nb::dict gpu_dict(const GpuInfo& g) {
  nb::dict d;
  d["name"] = g.name;
  d["ordinal"] = g.ordinal;
  d["preset"] = g.preset;
  nb::dict cc;
  cc["major"] = g.cc.major;
  cc["minor"] = g.cc.minor;
  d["compute_capability"] = cc;
  d["sm_count"] = g.sm_count;
  d["smem_per_sm_bytes"] = g.smem_per_sm_bytes;
  d["smem_per_block_bytes"] = g.smem_per_block_bytes;
  d["smem_per_block_optin_bytes"] = g.smem_per_block_optin_bytes;
  d["l2_bytes"] = g.l2_bytes;
  d["regs_per_sm"] = g.regs_per_sm;
  d["regs_per_block"] = g.regs_per_block;
  d["max_threads_per_sm"] = g.max_threads_per_sm;
  d["max_threads_per_block"] = g.max_threads_per_block;
  d["memory_total_bytes"] = g.memory_total_bytes;
  d["memory_free_bytes"] = g.memory_free_bytes;
  d["memory_bus_width_bits"] = g.memory_bus_width_bits;
  d["memory_clock_khz"] = g.memory_clock_khz;
  d["memory_bandwidth_gbps"] = g.memory_bandwidth_gbps;
  d["sm_clock_khz"] = g.sm_clock_khz;
  d["cluster_launch"] = g.cluster_launch;
  d["max_cluster_size"] = g.max_cluster_size;
  d["max_cluster_size_source"] = g.max_cluster_size_source;
  d["pci_bus_id"] = g.pci_bus_id;
  d["capabilities"] = capabilities_dict(g.caps);
  d["peak_bf16_tflops"] = g.peak_bf16_tflops();
  d["peak_fp8_tflops"] = g.peak_fp8_tflops();
  return d;
}

nb::dict cpu_dict(const CpuInfo& c) {
  nb::list caches;
  for (const CacheLevel& cache : c.caches) {
    nb::dict level;
    level["level"] = cache.level;
    level["type"] = cache.type;
    level["size_bytes"] = cache.size_bytes;
    level["count"] = cache.count;
    caches.append(level);
  }
  nb::dict d;
  d["model"] = c.model;
  d["vendor"] = c.vendor;
  d["architecture"] = c.architecture;
  d["logical_cores"] = c.logical_cores;
  d["physical_cores"] = c.physical_cores;
  d["features"] = list_of(c.features);
  d["caches"] = caches;
  d["memory_total_bytes"] = c.memory_total_bytes;
  d["memory_available_bytes"] = c.memory_available_bytes;
  return d;
}

nb::dict problem_dict(const GemmProblem& p) {
  nb::dict d;
  d["m"] = p.m;
  d["n"] = p.n;
  d["k"] = p.k;
  d["dtype"] = dtype_name(p);
  d["layout"] = std::string(to_string(p.layout));
  d["a_type"] = std::string(to_string(p.a_type));
  d["b_type"] = std::string(to_string(p.b_type));
  d["d_type"] = std::string(to_string(p.d_type));
  d["scaling"] = std::string(to_string(p.scaling));
  d["lda"] = p.lda_or_packed();
  d["ldb"] = p.ldb_or_packed();
  d["ldd"] = p.ldd_or_packed();
  d["flops"] = p.flops();
  d["grouping"] = std::string(to_string(p.grouping));
  d["num_groups"] = p.num_groups;
  d["expected_m"] = p.expected_group_rows();
  d["epilogue"] = p.epilogue.describe();
  return d;
}

nb::dict config_dict(const GemmConfig& c) {
  nb::dict d;
  d["describe"] = c.describe();
  d["instruction"] = std::string(to_string(c.instruction));
  d["block_m"] = c.block_m;
  d["block_n"] = c.block_n;
  d["block_k"] = c.block_k;
  d["num_stages"] = c.num_stages;
  d["num_consumers"] = c.num_consumers;
  d["cluster_m"] = c.cluster_m;
  d["cluster_n"] = c.cluster_n;
  d["multicast"] = std::string(to_string(c.multicast));
  d["persistent"] = c.persistent;
  d["raster_group"] = c.raster_group;
  d["raster_order"] = std::string(to_string(c.raster_order));
  d["split_k"] = c.split_k;
  d["promotion_buffers"] = c.promotion_buffers;
  d["ordered_issue"] = c.ordered_issue;
  d["pingpong"] = c.pingpong;
  d["n_tail_kernel"] = c.n_tail_kernel;
  d["swap_ab"] = c.swap_ab;
  return d;
}

nb::dict spec_dict(const KernelSpec& spec) {
  nb::list kernels;
  for (const KernelLaunch& k : spec.kernels) {
    nb::dict d;
    d["text"] = k.text;
    d["n"] = k.problem.n;
    d["first_column"] = k.first_column;
    d["grid_ctas"] = k.grid_ctas;
    d["threads_per_cta"] = k.threads_per_cta;
    d["cluster_size"] = k.cluster_size;
    d["smem_bytes"] = k.smem_bytes;
    d["work_items"] = k.work_items;
    d["warp_specialized"] = k.fields.warp_specialized;
    d["load_path"] = std::string(to_string(k.fields.load_path));
    d["store_path"] = std::string(to_string(k.fields.store_path));
    d["producer_registers"] = k.fields.producer_registers;
    d["consumer_registers"] = k.fields.consumer_registers;
    d["launch_dependents"] = k.fields.launch_dependents;
    d["waits_for_primary"] = k.fields.waits_for_primary;
    kernels.append(d);
  }
  nb::dict d;
  d["text"] = spec.text;
  d["vendor"] = spec.vendor;
  d["reason"] = spec.reason;
  d["kernels"] = kernels;
  d["split_k_workspace_bytes"] = spec.split_k.sync_bytes() + spec.split_k.partial_bytes();
  d["a_scales_k_block_major"] = spec.a_scales_k_block_major;
  d["a_scale_copy_bytes"] = spec.a_scale_copy_bytes;
  return d;
}

nb::dict prediction_dict(const Prediction& p) {
  nb::dict d;
  d["num_tiles"] = p.num_tiles;
  d["waves"] = p.waves;
  d["last_wave_utilization"] = p.last_wave_utilization;
  d["busy_sms"] = p.busy_sms;
  d["compute_us"] = p.compute_us;
  d["memory_us"] = p.memory_us;
  d["l2_us"] = p.l2_us;
  d["store_us"] = p.store_us;
  d["fixed_us"] = p.fixed_us;
  d["mma_efficiency"] = p.mma_efficiency;
  d["dram_bytes"] = p.dram_bytes;
  d["l2_bytes"] = p.l2_bytes;
  d["time_us"] = p.time_us;
  d["tflops"] = p.tflops;
  return d;
}

}  // namespace autogemm::python
