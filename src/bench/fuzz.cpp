// autogemm fuzz: drawing cases, compiling their kernels, running and checking them.
#include "bench/fuzz.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <future>
#include <map>
#include <random>
#include <set>

#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "bench/compare.hpp"
#include "bench/reference.hpp"
#include "bench/tensors.hpp"
#include "codegen/kernel_source.hpp"
#include "cuda/cuda_check.hpp"
#include "jit/jit.hpp"

namespace autogemm::bench {

namespace {

constexpr int64_t kMaxSize = 16384;
constexpr int64_t kGuardRows = 2;
constexpr int64_t kScaleBlock = 128;
// Each case reads its operands from a window that starts up to this many elements into the
// random buffers, so cases of one shape still see different data.
constexpr int64_t kWindowSlack = 4096;

using Rng = std::mt19937_64;

// A generator for draw `index` of stream `stream` (families and cases draw apart), so any
// case can be drawn alone.
Rng rng_for(uint64_t seed, uint64_t stream, uint64_t index) {
  std::seed_seq seq{uint32_t(seed), uint32_t(seed >> 32), uint32_t(stream), uint32_t(index),
                    uint32_t(index >> 32)};
  return Rng(seq);
}

int64_t uniform(Rng& rng, int64_t lo, int64_t hi) {   // [lo, hi]
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}
bool chance(Rng& rng, double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; }
template <class T>
const T& pick(Rng& rng, const std::vector<T>& v) { return v[size_t(uniform(rng, 0, int64_t(v.size()) - 1))]; }

int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

// 1..16384: a fifth decode sizes (1..32), a third next to a tile edge (a multiple of 64, then
// -8, -1, 0, +1 or +8), the rest log-uniform.
int64_t draw_size(Rng& rng) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  int64_t size;
  if (u < 0.2) {
    size = uniform(rng, 1, 32);
  } else if (u < 0.53) {
    const int64_t edge = uniform(rng, 1, 8) << uniform(rng, 6, 11);
    size = edge + pick(rng, std::vector<int64_t>{-8, -1, 0, 0, 1, 8});
  } else {
    size = int64_t(std::exp(std::uniform_real_distribution<double>(0, std::log(kMaxSize))(rng)));
  }
  return std::clamp<int64_t>(size, 1, kMaxSize);
}

bool is_fp8(FuzzInput input) {
  return input == FuzzInput::fp8_block || input == FuzzInput::fp8_tensor;
}

struct Family {
  FuzzInput input;
  DType out;
  Layout layout;
  int64_t n, k;
  std::optional<GemmConfig> config;
};

GemmProblem family_problem(const Family& f, int64_t m) {
  GemmProblem p;
  p.m = m;
  p.n = f.n;
  p.k = f.k;
  p.a_type = p.b_type = f.input == FuzzInput::bf16   ? DType::bf16
                        : f.input == FuzzInput::fp16 ? DType::fp16
                                                     : DType::e4m3;
  p.d_type = f.out;
  p.layout = f.layout;
  p.scaling = f.input == FuzzInput::fp8_block    ? Scaling::block_1x128_128x128
              : f.input == FuzzInput::fp8_tensor ? Scaling::per_tensor
                                                 : Scaling::none;
  return p;
}

// Leading dimensions: packed or padded, 16-byte aligned, so our kernel serves the call; for
// 16-bit inputs with the planner's choice sometimes not (cuBLASLt serves those).
void draw_leading_dimensions(Rng& rng, GemmProblem& p, bool allow_unaligned) {
  const int64_t in_align = 16 / dtype_bytes(p.a_type), out_align = 16 / dtype_bytes(p.d_type);
  auto ld = [&](int64_t row, int64_t align) {
    if (allow_unaligned && chance(rng, 0.1)) return row + uniform(rng, 0, 7);
    const int64_t aligned = round_up(row, align);
    return chance(rng, 0.6) && aligned == row ? int64_t(0) : aligned + align * uniform(rng, 0, 8);
  };
  p.lda = ld(a_is_k_major(p.layout) ? p.k : p.m, in_align);
  p.ldb = ld(b_is_k_major(p.layout) ? p.k : p.n, in_align);
  p.ldd = ld(p.n, out_align);
  p.ldc = ld(p.n, out_align);
}

bool fits(const FuzzOptions& o, const GemmProblem& p) {
  const int64_t a = p.m * p.k, b = p.n * p.k, d = p.m * p.n;
  return d <= o.max_output_elements && std::max({a, b, d}) <= o.max_operand_elements &&
         double(p.m) * double(p.n) * double(p.k) <= double(o.max_work);
}

// A configuration of the kernel family, each field at random over its whole range; the
// caller keeps the ones the rules accept.
GemmConfig draw_config(Rng& rng, const GemmProblem& p) {
  GemmConfig c;
  const bool fp8 = dtype_bytes(p.a_type) == 1;
  c.block_m = pick(rng, std::vector<int>{64, 128, 256});
  c.block_n = p.n <= 8 && chance(rng, 0.5) ? 8 : int(16 * uniform(rng, 1, 16));
  c.block_k = fp8 ? 128 : (chance(rng, 0.7) ? 64 : 128);
  c.num_consumers = int(uniform(rng, 1, 2));
  c.num_stages = int(uniform(rng, 1, 8));
  const int cluster = int(uniform(rng, 0, 6));
  if (cluster == 4) { c.cluster_m = 2; c.multicast = Multicast::b; }
  if (cluster == 5) { c.cluster_n = 2; c.multicast = Multicast::a; }
  if (cluster == 6) c.cluster_m = 2;
  c.persistent = chance(rng, 0.75);
  c.raster_group = pick(rng, std::vector<int>{1, 8, 16});
  c.raster_order = chance(rng, 0.5) ? RasterOrder::along_m : RasterOrder::along_n;
  c.split_k = chance(rng, 0.6) ? 1 : pick(rng, std::vector<int>{2, 3, 4, 8});
  c.promotion_buffers = fp8 && chance(rng, 0.5) ? 2 : 1;
  c.ordered_issue = fp8 && chance(rng, 0.3);
  c.n_tail_kernel = chance(rng, 0.2);
  c.swap_ab = !fp8 && chance(rng, 0.2);
  c.pingpong = !fp8 && c.num_consumers == 2 && chance(rng, 0.25);
  return c;
}

Family draw_family(const FuzzOptions& o, const GpuInfo& device, int index) {
  Rng rng = rng_for(o.seed, 1, uint64_t(index));
  Family f;
  f.input = pick(rng, o.inputs);
  f.layout = is_fp8(f.input) ? Layout::nt
                             : pick(rng, std::vector<Layout>{Layout::nt, Layout::nn, Layout::tn,
                                                             Layout::tt});
  f.out = f.input == FuzzInput::fp16 ? (chance(rng, 0.5) ? DType::fp16 : DType::fp32)
                                     : (chance(rng, 0.5) ? DType::bf16 : DType::fp32);
  do {
    f.n = draw_size(rng);
    f.k = draw_size(rng);
  } while (f.n * f.k > o.max_operand_elements);
  if (!chance(rng, o.forced_share)) return f;
  // A forced configuration the rules accept for a representative M and aligned rows; each
  // case checks it again for its own problem.
  GemmProblem p = family_problem(f, 257);
  p.lda = round_up(a_is_k_major(p.layout) ? p.k : p.m, 16);
  p.ldb = round_up(b_is_k_major(p.layout) ? p.k : p.n, 16);
  p.ldc = p.ldd = round_up(p.n, 16);
  for (int attempt = 0; attempt < 400 && !f.config; ++attempt) {
    const GemmConfig c = draw_config(rng, p);
    try {
      make_kernel_spec(p, c, device);
      f.config = c;
    } catch (const InvalidArgument&) {
    }
  }
  return f;
}

}  // namespace

std::string_view to_string(FuzzInput input) {
  switch (input) {
    case FuzzInput::bf16: return "bf16";
    case FuzzInput::fp16: return "fp16";
    case FuzzInput::fp8_block: return "fp8";
    case FuzzInput::fp8_tensor: return "fp8-tensor";
  }
  return "?";
}

std::vector<FuzzCase> draw_fuzz_cases(const FuzzOptions& o, const GpuInfo& device,
                                      std::optional<int64_t> only) {
  if (o.cases < 1) throw InvalidArgument("cases", std::to_string(o.cases), "must be >= 1");
  if (o.families < 1) throw InvalidArgument("families", std::to_string(o.families), "must be >= 1");
  if (o.inputs.empty()) throw InvalidArgument("dtype", "(none)", "at least one input type");
  if (only && (*only < 0 || *only >= o.cases))
    throw InvalidArgument("only", std::to_string(*only),
                          fmt::format("a case index in 0..{}", o.cases - 1));
  std::map<int, Family> families;
  std::vector<FuzzCase> cases;
  for (int64_t i = only.value_or(0); i < (only ? *only + 1 : o.cases); ++i) {
    Rng rng = rng_for(o.seed, 2, uint64_t(i));
    FuzzCase c;
    c.index = i;
    c.family = int(uniform(rng, 0, o.families - 1));
    auto it = families.find(c.family);
    if (it == families.end()) it = families.emplace(c.family, draw_family(o, device, c.family)).first;
    const Family& f = it->second;
    c.input = f.input;
    int64_t m = draw_size(rng);
    while (m > 1 && !fits(o, family_problem(f, m))) m = std::max<int64_t>(1, m / 2);
    c.problem = family_problem(f, m);
    draw_leading_dimensions(rng, c.problem, !f.config && !is_fp8(f.input));
    c.alpha = chance(rng, 0.5) ? 1.0f : float(uniform(rng, -200, 200)) / 100.0f;
    c.beta = chance(rng, 0.6) ? 0.0f : float(uniform(rng, -150, 150) | 1) / 100.0f;
    c.problem.reads_c = c.beta != 0.0f;
    c.data_seed = rng();
    if (f.config) {
      try {
        make_kernel_spec(c.problem, *f.config, device);
        c.config = f.config;
      } catch (const InvalidArgument&) {
        // The family's configuration does not suit this M (a rule on M's tiles): the planner's.
      }
    }
    cases.push_back(c);
  }
  return cases;
}

std::string fuzz_reproducer(const FuzzCase& c, const FuzzOptions& o) {
  const GemmProblem& p = c.problem;
  const char* dtype = c.input == FuzzInput::fp8_block    ? "fp8"
                      : c.input == FuzzInput::fp8_tensor ? "fp8"
                                                         : (c.input == FuzzInput::bf16 ? "bf16"
                                                                                      : "fp16");
  return fmt::format(
      "autogemm fuzz --seed {} --cases {} --families {} --dtype {} --only {}   "
      "(nearest bench: autogemm bench --m {} --n {} --k {} --dtype {} --layout {} --out-dtype {}{}; "
      "this case: lda {} ldb {} ldc {} ldd {} alpha {} beta {}{})",
      o.seed, o.cases, o.families,
      o.inputs.size() == 4 ? std::string("all") : std::string(to_string(o.inputs.front())),
      c.index, p.m, p.n, p.k, dtype, to_string(p.layout), to_string(p.d_type),
      c.config ? fmt::format(" --config \"{}\"", c.config->describe()) : std::string(),
      p.lda_or_packed(), p.ldb_or_packed(), p.ldc_or_packed(), p.ldd_or_packed(), c.alpha, c.beta,
      c.input == FuzzInput::fp8_tensor ? ", per-tensor scales" : "");
}

// ---- Kernels -------------------------------------------------------------------------------

namespace {

KernelSpec spec_of(const FuzzCase& c, const GpuInfo& device) {
  return c.config ? make_kernel_spec(c.problem, *c.config, device)
                  : plan_gemm(c.problem, device).spec;
}

// Runs `work(i)` for i in [0, count) on `threads` threads.
template <class Work>
void parallel_for(int64_t count, int threads, Work work) {
  std::vector<std::future<void>> running;
  for (int t = 0; t < std::max(1, threads); ++t)
    running.push_back(std::async(std::launch::async, [&, t] {
      for (int64_t i = t; i < count; i += std::max(1, threads)) work(i);
    }));
  for (auto& r : running) r.get();
}

}  // namespace

int64_t precompile_fuzz_kernels(const std::vector<FuzzCase>& cases, const GpuInfo& device,
                                int threads, int64_t limit) {
  std::vector<KernelSpec> specs(cases.size());
  parallel_for(int64_t(cases.size()), threads,
               [&](int64_t i) { specs[size_t(i)] = spec_of(cases[size_t(i)], device); });
  std::map<std::string, KernelLaunch> kernels;
  for (const KernelSpec& spec : specs)
    for (const KernelLaunch& k : spec.kernels) {
      if (limit > 0 && int64_t(kernels.size()) >= limit) break;
      kernels.emplace(k.identity, k);
    }
  std::vector<const KernelLaunch*> list;
  for (const auto& [identity, k] : kernels) list.push_back(&k);
  parallel_for(int64_t(list.size()), threads, [&](int64_t i) {
    jit::get_or_compile(codegen::gemm_kernel_source(*list[size_t(i)], false));
  });
  return int64_t(list.size());
}

std::string check_fuzz_case_on_cpu(const FuzzCase& c, const GpuInfo& device) {
  KernelSpec spec;
  try {
    spec = spec_of(c, device);
  } catch (const std::exception& e) {
    return fmt::format("no spec: {}", e.what());
  }
  if (c.config && spec.text != c.config->describe())
    return fmt::format("spec text {} for configuration {}", spec.text, c.config->describe());
  if (spec.vendor) return c.config ? "a forced configuration became the vendor path" : "";
  if (spec.kernels.empty()) return "a spec of ours with no kernel";
  if (spec.kernels.size() != (spec.config.n_tail_kernel ? 2u : 1u))
    return fmt::format("{} kernels for {}", spec.kernels.size(), spec.text);
  int64_t columns = 0;
  for (const KernelLaunch& k : spec.kernels) {
    // The decode family (mma) uses static shared memory only; the tile family always some.
    const bool decode = k.fields.config.instruction == Instruction::mma;
    if (k.smem_bytes > device.smem_per_block_optin_bytes || (k.smem_bytes <= 0 && !decode))
      return fmt::format("{}: {} B of shared memory", k.text, k.smem_bytes);
    if (k.grid_ctas < 1 || k.grid_ctas % k.cluster_size != 0)
      return fmt::format("{}: grid {} for clusters of {}", k.text, k.grid_ctas, k.cluster_size);
    if (k.threads_per_cta % 128 != 0 || k.threads_per_cta > 384)
      return fmt::format("{}: {} threads", k.text, k.threads_per_cta);
    if (k.first_column != columns) return fmt::format("{}: starts at column {}", k.text, k.first_column);
    columns += k.problem.n;
  }
  // A swapped kernel's columns are the call's rows (plan/swap_ab.hpp).
  const int64_t want = spec.config.swap_ab ? c.problem.m : c.problem.n;
  if (columns != want)
    return fmt::format("the kernels cover {} of {} {}", columns, want,
                       spec.config.swap_ab ? "rows (swapped)" : "columns");
  return {};
}

// ---- Running -------------------------------------------------------------------------------

struct FuzzRunner::Buffers {
  std::map<DType, DeviceBuffer> a, b, c;   // random operands by element type
  DeviceBuffer d, ref, magnitude, scale_a, scale_b;
  cudaStream_t stream = nullptr;
};

namespace {

int64_t stored_rows_a(const GemmProblem& p) { return a_is_k_major(p.layout) ? p.m : p.k; }
int64_t stored_rows_b(const GemmProblem& p) { return b_is_k_major(p.layout) ? p.n : p.k; }
int64_t k_blocks(const GemmProblem& p) { return (p.k + kScaleBlock - 1) / kScaleBlock; }

// A window of a random buffer for a case: a 16-byte aligned start within the slack.
const void* window(const DeviceBuffer& buffer, DType t, uint64_t seed) {
  const int64_t align = 16 / dtype_bytes(t);
  const int64_t offset = int64_t(seed % uint64_t(kWindowSlack / align)) * align;
  return static_cast<const char*>(buffer.get()) + offset * dtype_bytes(t);
}

}  // namespace

FuzzRunner::FuzzRunner(const std::vector<FuzzCase>& cases) : buffers_(new Buffers) {
  std::map<DType, size_t> a_bytes, b_bytes, c_bytes;
  size_t d_bytes = 0, ref_bytes = 0, sa_count = 1, sb_count = 1;
  for (const FuzzCase& fc : cases) {
    const GemmProblem& p = fc.problem;
    const size_t in = size_t(dtype_bytes(p.a_type)), out = size_t(dtype_bytes(p.d_type));
    a_bytes[p.a_type] = std::max(a_bytes[p.a_type], size_t(stored_rows_a(p) * p.lda_or_packed()) * in);
    b_bytes[p.b_type] = std::max(b_bytes[p.b_type], size_t(stored_rows_b(p) * p.ldb_or_packed()) * in);
    c_bytes[p.d_type] = std::max(c_bytes[p.d_type], size_t(p.m * p.ldc_or_packed()) * out);
    d_bytes = std::max(d_bytes, size_t((p.m + 2 * kGuardRows) * p.ldd_or_packed()) * out);
    ref_bytes = std::max(ref_bytes, size_t(p.m * p.n) * sizeof(double));
    sa_count = std::max(sa_count, size_t(p.m * k_blocks(p)));
    sb_count = std::max(sb_count, size_t((p.n + kScaleBlock - 1) / kScaleBlock * k_blocks(p)));
  }
  Buffers& b = *buffers_;
  uint64_t seed = 1;
  auto filled = [&](std::map<DType, DeviceBuffer>& into, const std::map<DType, size_t>& sizes) {
    for (const auto& [type, bytes] : sizes) {
      const size_t count = bytes / size_t(dtype_bytes(type)) + size_t(kWindowSlack);
      into.emplace(type, DeviceBuffer(count * size_t(dtype_bytes(type))));
      fill_random(into[type].get(), count, type, seed++);
    }
  };
  filled(b.a, a_bytes);
  filled(b.b, b_bytes);
  filled(b.c, c_bytes);
  b.d = DeviceBuffer(d_bytes);
  b.ref = DeviceBuffer(ref_bytes);
  b.magnitude = DeviceBuffer(ref_bytes);
  // Positive scales over two decades, as a quantiser makes them.
  b.scale_a = DeviceBuffer(sa_count * sizeof(float));
  b.scale_b = DeviceBuffer(sb_count * sizeof(float));
  fill_uniform(b.scale_a.get(), sa_count, DType::fp32, seed++, 0.05, 5.0);
  fill_uniform(b.scale_b.get(), sb_count, DType::fp32, seed++, 0.05, 5.0);
  cuda_check(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking), "cudaStreamCreate");
}

FuzzRunner::~FuzzRunner() {
  if (buffers_->stream != nullptr) (void)cudaStreamDestroy(buffers_->stream);
  delete buffers_;
}

bool FuzzRunner::context_usable() {
  (void)cudaGetLastError();                        // clears an error that is not sticky
  return cudaDeviceSynchronize() == cudaSuccess;   // a sticky one is returned again
}

FuzzOutcome FuzzRunner::run(const FuzzCase& fc) {
  Buffers& b = *buffers_;
  const GemmProblem& p = fc.problem;
  const int64_t ldd = p.ldd_or_packed(), out_bytes = dtype_bytes(p.d_type);
  const size_t d_count = size_t((p.m + 2 * kGuardRows) * ldd);
  // Poison: all-ones bytes are a NaN in bf16, fp16 and fp32.
  cuda_check(cudaMemsetAsync(b.d.get(), 0xFF, d_count * size_t(out_bytes), b.stream),
             "cudaMemsetAsync(poison D)");
  GemmOperands ops;
  ops.a = window(b.a.at(p.a_type), p.a_type, fc.data_seed);
  ops.b = window(b.b.at(p.b_type), p.b_type, fc.data_seed >> 16);
  ops.c = p.reads_c ? window(b.c.at(p.d_type), p.d_type, fc.data_seed >> 32) : nullptr;
  ops.d = static_cast<char*>(b.d.get()) + kGuardRows * ldd * out_bytes;
  ops.alpha = fc.alpha;
  ops.beta = fc.beta;
  if (p.scaling != Scaling::none) {
    ops.scale_a = static_cast<const float*>(b.scale_a.get());
    ops.scale_b = static_cast<const float*>(b.scale_b.get());
  }
  FuzzOutcome out;
  try {
    GemmOptions options;
    options.config = fc.config;
    const GemmReport report = gemm(p, ops, b.stream, options);
    out.config = report.config.describe();
    reference_gemm(p, ops, static_cast<double*>(b.ref.get()), b.stream,
                   static_cast<double*>(b.magnitude.get()));
    cuda_check(cudaStreamSynchronize(b.stream), "cudaStreamSynchronize (fuzz case)");
  } catch (const std::exception& e) {
    out.error = e.what();
    (void)cudaStreamSynchronize(b.stream);
    return out;
  }
  std::vector<double> got, want(size_t(p.m * p.n)), magnitude(want.size());
  try {
    got = download_as_double(b.d.get(), d_count, p.d_type);
    cuda_check(cudaMemcpy(want.data(), b.ref.get(), want.size() * sizeof(double),
                          cudaMemcpyDeviceToHost), "cudaMemcpy(reference)");
    cuda_check(cudaMemcpy(magnitude.data(), b.magnitude.get(), want.size() * sizeof(double),
                          cudaMemcpyDeviceToHost), "cudaMemcpy(magnitude)");
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  // A correct result is the reference rounded to D's type, plus the accumulation's rounding:
  // fp32 sums of 16-bit products (2^-12 of the sum of |terms| is a wide margin), or FP8's
  // ~14-bit accumulation inside a k-block (2^-10, as the FP8 GPU tests allow).
  const double rounding = p.d_type == DType::bf16 ? std::ldexp(1.0, -8)
                          : p.d_type == DType::fp16 ? std::ldexp(1.0, -11)
                                                    : std::ldexp(1.0, -22);
  const double accumulation = dtype_bytes(p.a_type) == 1 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -12);
  // Below the smallest normal the spacing is absolute: fp16 subnormals are 2^-24 apart (a
  // K = 1 product of ~1e-5 rounds by up to 3e-8), bf16's 2^-133 and fp32's 2^-149.
  const double subnormal_spacing = p.d_type == DType::fp16   ? std::ldexp(1.0, -24)
                                   : p.d_type == DType::bf16 ? std::ldexp(1.0, -133)
                                                             : std::ldexp(1.0, -149);
  std::vector<double> inside(want.size());
  for (int64_t row = 0; row < p.m + 2 * kGuardRows; ++row)
    for (int64_t col = 0; col < ldd; ++col) {
      const double g = got[size_t(row * ldd + col)];
      const int64_t r = row - kGuardRows;
      if (r < 0 || r >= p.m || col >= p.n) {
        out.guard += std::isnan(g) ? 0 : 1;
        continue;
      }
      const size_t i = size_t(r * p.n + col);
      inside[i] = g;
      const double bound =
          rounding * std::fabs(want[i]) + accumulation * magnitude[i] + subnormal_spacing;
      if (!(std::fabs(g - want[i]) <= bound)) {   // false for NaN: unwritten
        if (out.bad++ == 0)
          out.first_bad = fmt::format("({}, {}): got {}, want {} (bound {})", r, col, g, want[i],
                                      bound);
      }
    }
  out.diff = gemm_diff(inside, want);
  out.passed = out.bad == 0 && out.guard == 0 && !(out.diff > 1e-5);
  return out;
}

}  // namespace autogemm::bench
