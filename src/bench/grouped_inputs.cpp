// The grouped bench's device data of one row (grouped_inputs.hpp).
#include "bench/grouped_inputs.hpp"

#include "autogemm/quantize.hpp"
#include "cuda/cuda_check.hpp"

namespace autogemm::bench {

namespace {

void upload_int32(DeviceBuffer& buffer, const std::vector<int32_t>& values, const char* what) {
  buffer = DeviceBuffer(values.size() * sizeof(int32_t));
  cuda_check(cudaMemcpy(buffer.get(), values.data(), buffer.bytes(), cudaMemcpyHostToDevice), what);
  // A pageable copy may return before its DMA lands; the row's stream does not wait for the
  // legacy default stream (tensors.cpp says the same).
  cuda_check(cudaStreamSynchronize(nullptr), what);
}

// The FP8 row's inputs: its BF16 sources quantised into a, b and their scales (file comment of
// grouped_inputs.hpp), on the legacy default stream, finished when this returns.
void quantise_grouped(GroupedInputs& in) {
  const GemmProblem& p = in.problem;
  const int64_t rows = p.stored_rows();
  const int64_t b_group_scales = fp8_scale_count_128x128(p.n, p.k);
  in.a = DeviceBuffer(std::size_t(rows * p.k));
  in.b = DeviceBuffer(std::size_t(p.num_groups * p.n * p.k));
  in.scale_a = DeviceBuffer(std::size_t(fp8_scale_count_1x128(rows, p.k)) * sizeof(float));
  in.scale_b = DeviceBuffer(std::size_t(p.num_groups * b_group_scales) * sizeof(float));
  quantize_fp8_1x128(in.sources.a.get(), DType::bf16, rows, p.k, p.k, in.a.get(),
                     static_cast<float*>(in.scale_a.get()));
  const std::size_t b_group_bf16 = std::size_t(p.n * p.k) * dtype_bytes(DType::bf16);
  for (int64_t g = 0; g < p.num_groups; ++g)
    quantize_fp8_128x128(static_cast<const char*>(in.sources.b.get()) + g * b_group_bf16,
                         DType::bf16, p.n, p.k, p.k,
                         static_cast<char*>(in.b.get()) + g * p.n * p.k,
                         static_cast<float*>(in.scale_b.get()) + g * b_group_scales);
  cuda_check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize(grouped FP8 quantisation)");
}

}  // namespace

GroupedInputs::GroupedInputs(const GroupedItem& item, bool baseline) : problem(item.problem) {
  const GemmProblem& p = problem;
  const std::size_t rows = std::size_t(p.stored_rows());
  const std::size_t d_count = rows * std::size_t(p.n);
  if (block_scaled_fp8(p)) {
    sources = make_fp8_sources(int64_t(rows), p.num_groups * p.n, p.k, item.input_seed);
    quantise_grouped(*this);
  } else {
    const std::size_t a_count = rows * std::size_t(p.k);
    const std::size_t b_count = std::size_t(p.num_groups * p.n * p.k);
    a = DeviceBuffer(a_count * dtype_bytes(p.a_type));
    b = DeviceBuffer(b_count * dtype_bytes(p.b_type));
    fill_random(a.get(), a_count, p.a_type, item.input_seed);
    fill_random(b.get(), b_count, p.b_type, item.input_seed + 1);
  }
  d_ours = DeviceBuffer(d_count * dtype_bytes(p.d_type));
  fill_poison(d_ours.get(), d_count, p.d_type);
  poison = download_bytes(d_ours.get(), std::size_t(dtype_bytes(p.d_type)));
  if (baseline) {
    d_base = DeviceBuffer(d_count * dtype_bytes(p.d_type));
    fill_poison(d_base.get(), d_count, p.d_type);
  }
  if (p.grouping == Grouping::contiguous) {
    upload_int32(group_index, contiguous_group_index(p, item.group_rows),
                 "cudaMemcpy(group_index)");
  } else {
    upload_int32(masked_m, std::vector<int32_t>(item.group_rows.begin(), item.group_rows.end()),
                 "cudaMemcpy(masked_m)");
  }
}

GroupedOperands GroupedInputs::operands() const {
  GroupedOperands ops;
  ops.a = a.get();
  ops.b = b.get();
  ops.d = d_ours.get();
  ops.group_index = static_cast<const int32_t*>(group_index.get());
  ops.masked_m = static_cast<const int32_t*>(masked_m.get());
  ops.scale_a = static_cast<const float*>(scale_a.get());
  ops.scale_b = static_cast<const float*>(scale_b.get());
  return ops;
}

GroupedOperands GroupedInputs::baseline_operands() const {
  GroupedOperands ops = operands();
  ops.d = d_base.get();
  return ops;
}

const void* GroupedInputs::reference_a() const {
  return block_scaled_fp8(problem) ? sources.a.get() : a.get();
}

const void* GroupedInputs::reference_b() const {
  return block_scaled_fp8(problem) ? sources.b.get() : b.get();
}

DType GroupedInputs::reference_type() const {
  return block_scaled_fp8(problem) ? DType::bf16 : problem.a_type;
}

void GroupedInputs::release_sources() { sources = Fp8Sources{}; }

void GroupedInputs::repoison_base() {
  fill_poison(d_base.get(), std::size_t(problem.stored_rows() * problem.n), problem.d_type);
}

std::vector<unsigned char> download_bytes(const void* device, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  if (bytes > 0)
    cuda_check(cudaMemcpy(host.data(), device, bytes, cudaMemcpyDeviceToHost),
               "cudaMemcpy(grouped bench download)");
  return host;
}

}  // namespace autogemm::bench
