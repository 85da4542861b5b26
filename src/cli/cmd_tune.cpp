// `autogemm tune --suite FILE`: autotunes every shape of a suite through autogemm::gemm() on
// random inputs and so fills the tuning record (runtime/tuning_record.hpp), which later
// processes' gemm() calls read instead of timing again. Per row: the planner's choice, the
// winner (one of our configurations or a cuBLASLt algorithm: runtime/autotune.hpp) and cuBLASLt's
// default, all timed like the bench times (L2 flushed, median), and where the winner came from
// (tuned now, already in the record, or a tuning file). `--export FILE` writes the rows' entries
// into one tuning file (runtime/tuning_file.hpp). Without a GPU it shows the plan, as
// `autogemm bench` does.
#include <fmt/format.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/plan.hpp"
#include "bench/bench_report.hpp"
#include "bench/bench_runner.hpp"
#include "bench/progress.hpp"
#include "bench/suite.hpp"
#include "bench/tensors.hpp"
#include "bench/timing.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/row_problem.hpp"
#include "cli/tune_sweep.hpp"
#include "cuda/cuda_check.hpp"
#include "runtime/autotune.hpp"
#include "runtime/cublaslt.hpp"
#include "runtime/tuning_file.hpp"
#include "runtime/tuning_record.hpp"

namespace autogemm::cli {

namespace {

struct TuneOptions {
  std::string suite;
  std::string wgrad;         // --wgrad FILE: the suite's rows as weight gradients (row_problem.hpp)
  std::string dtype = "bf16";
  std::string layout = "nt";
  std::string out_dtype;     // empty: bf16 (fp16 for fp16 inputs)
  bool accumulate = false;   // D += A B (beta 1; timed with a C of its own, bench/tensors.hpp)
  std::string device;
  int candidates = 8;
  int warmup = 3;
  int iters = 10;
  uint64_t seed = 2026;
  bool retune = false;
  bool graph = false;        // time candidates as CUDA graph replays
  std::string export_path;   // write the rows' entries into one tuning file
  bool sweep = false;        // time the legal set instead of tuning (cli/tune_sweep.hpp)
  int sample = 16;
  std::string sweep_csv;
};

struct TuneRow {
  bench::BenchItem item;
  std::string planned;          // the planner's choice
  double planned_us = 0;
  std::string winner;           // what gemm() runs with the record
  double winner_us = 0;
  double cublaslt_us = 0;       // cuBLASLt's heuristic's first algorithm (the bench's baseline)
  std::string no_cublaslt;      // why there is no cuBLASLt time
  std::string source;           // "tuned over N", "record (N, date)", or why not tuned
  std::string failure;          // empty when the row worked
};

bool is_ordinal(const std::string& spec) {
  if (spec.empty()) return false;
  for (unsigned char c : spec)
    if (!std::isdigit(c)) return false;
  return true;
}

// Throws unless the process has a tuning record (tune's only job is filling it).
void require_tuning_record() {
  const runtime::TuningRecordStatus status = runtime::tuning_record_status();
  if (!status.on)
    throw InvalidArgument(status.variable, status.value,
                          fmt::format("{}; tune fills the tuning record, so it needs one "
                                      "(docs/env-vars.md)", status.why_off));
}

// The record tune writes into: the process's, checked writable (its folder is created here).
std::shared_ptr<runtime::TuningRecord> writable_record(bool retune) {
  require_tuning_record();
  const runtime::TuningRecordStatus status = runtime::tuning_record_status();
  std::shared_ptr<runtime::TuningRecord> record = runtime::process_tuning_record();
  if (const std::string why = record->writable_problem(); !why.empty())
    throw InvalidArgument(status.variable, status.value,
                          fmt::format("the tuning record cannot be written: {}", why));
  if (retune) {   // time every row again: gemm() reads nothing, still writes the winners
    record = std::make_shared<runtime::TuningRecord>(record->folder(), /*read=*/false);
    runtime::set_process_tuning_record(record);
  }
  return record;
}

// Where the winner came from, from gemm()'s reason: "tuned now, over N candidates and M
// cuBLASLt algorithms ...", "record (...)", "file (...)", or "not tuned: why".
std::string source_of(const GemmReport& report) {
  for (const char* origin : {"record", "file"})
    if (const auto at = report.reason.find(fmt::format("from the tuning {} ", origin));
        at != std::string::npos)
      return fmt::format("{} {}", origin,
                         report.reason.substr(at + fmt::formatted_size("from the tuning {} ",
                                                                       origin)));
  if (const auto at = report.reason.find("autotuned over"); at != std::string::npos)
    return "tuned now, " + report.reason.substr(at + std::string_view("autotuned ").size());
  return "not tuned: " + report.reason;
}

bool tuned_or_recorded(const TuneRow& row) {
  return row.failure.empty() && row.source.rfind("not tuned", 0) != 0;
}

// One row: autotune through gemm() (the record is written there), then time the planner's
// choice, the winner (as gemm() runs it from now on) and cuBLASLt's first algorithm alike.
void tune_row(TuneRow& row, const GpuInfo& gpu, const TuneOptions& o, cudaStream_t stream,
              bench::L2Flusher& flusher) {
  const GemmProblem& p = row.item.problem;
  const Plan plan = plan_gemm(p, gpu);
  row.planned = plan.spec.vendor ? "cuBLASLt" : plan.spec.config.describe();
  const bench::GemmInputs inputs = bench::make_gemm_inputs(p, o.seed);
  const GemmOperands ops = inputs.operands();
  GemmOptions tuned;
  tuned.device = gpu.ordinal;
  tuned.autotune = o.candidates;
  tuned.autotune_graph = o.graph ? 1 : 0;
  const GemmReport report = gemm(p, ops, stream, tuned);
  cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(autotuned call)");
  row.winner = report.used_vendor ? "cuBLASLt" : report.config.describe();
  row.source = source_of(report);

  auto forced = [&](const std::string& text) {
    GemmOptions options;
    options.device = gpu.ordinal;
    options.config = GemmConfig::parse(text);
    return [p, ops, options](cudaStream_t s) { gemm(p, ops, s, options); };
  };
  std::vector<std::function<void(cudaStream_t)>> calls;
  calls.push_back(plan.spec.vendor ? forced("cuBLASLt") : forced(row.planned));
  calls.push_back([p, ops, tuned](cudaStream_t s) { gemm(p, ops, s, tuned); });
  try {   // cuBLASLt may decline the problem: then there is nothing to compare with
    forced("cuBLASLt")(stream);
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize(cuBLASLt)");
    calls.push_back(forced("cuBLASLt"));
  } catch (const runtime::CublasLtRefusal& e) {
    row.no_cublaslt = e.reason();
  }
  const auto times = bench::time_interleaved(calls, o.warmup, o.iters, stream, &flusher);
  row.planned_us = bench::summarize(times[0]).median_us;
  row.winner_us = bench::summarize(times[1]).median_us;
  if (times.size() > 2) row.cublaslt_us = bench::summarize(times[2]).median_us;
}

std::string format_rows(const std::vector<TuneRow>& rows) {
  std::size_t width = 16;
  for (const TuneRow& r : rows) width = std::max({width, r.planned.size(), r.winner.size()});
  std::string out =
      fmt::format("{:>6} {:>6} {:>6} {:<8} {:<{}} {:>9}  {:<{}} {:>9} {:>7} {:>9} {:>7}  {}\n",
                  "m", "n", "k", "tag", "planner's choice", width, "us", "winner", width, "us",
                  "gain", "cuBLASLt", "ratio", "source");
  for (const TuneRow& r : rows) {
    const GemmProblem& p = r.item.problem;
    if (!r.failure.empty()) {
      out += fmt::format("{:>6} {:>6} {:>6} {:<8} FAILED: {}\n", p.m, p.n, p.k, r.item.tag,
                         r.failure);
      continue;
    }
    // ratio: cuBLASLt's time over the winner's (>= 1: the tuned row is not slower).
    const bool lt = r.cublaslt_us > 0 && r.winner_us > 0;
    out += fmt::format(
        "{:>6} {:>6} {:>6} {:<8} {:<{}} {:>9.2f}  {:<{}} {:>9.2f} {:>7.3f} {:>9} {:>7}  {}{}\n",
        p.m, p.n, p.k, r.item.tag, r.planned, width, r.planned_us, r.winner, width, r.winner_us,
        r.winner_us > 0 ? r.planned_us / r.winner_us : 0.0,
        lt ? fmt::format("{:.2f}", r.cublaslt_us) : "n/a",
        lt ? fmt::format("{:.3f}", r.cublaslt_us / r.winner_us) : "n/a", r.source,
        r.no_cublaslt.empty() ? "" : " (no cuBLASLt: " + r.no_cublaslt + ")");
  }
  return out;
}

// Under the table: how many rows cuBLASLt won, and the lowest ratio to cuBLASLt's time.
std::string format_vendor_summary(const std::vector<TuneRow>& rows) {
  std::size_t vendor = 0, compared = 0;
  const TuneRow* lowest = nullptr;
  for (const TuneRow& r : rows) {
    if (!r.failure.empty()) continue;
    vendor += r.winner == "cuBLASLt" ? 1 : 0;
    if (!(r.cublaslt_us > 0 && r.winner_us > 0)) continue;
    ++compared;
    if (!lowest || r.cublaslt_us / r.winner_us < lowest->cublaslt_us / lowest->winner_us)
      lowest = &r;
  }
  std::string out = fmt::format("cuBLASLt won {} of {} rows", vendor, rows.size());
  if (lowest)
    out += fmt::format("; lowest ratio to cuBLASLt {:.3f} at {}x{}x{} over {} rows", 
                       lowest->cublaslt_us / lowest->winner_us, lowest->item.problem.m,
                       lowest->item.problem.n, lowest->item.problem.k, compared);
  return out + "\n";
}

// The rows' entries (from the tuning file that decided them, else the record) in one file.
std::size_t export_rows(const std::vector<TuneRow>& rows, const GpuInfo& gpu,
                        const runtime::TuningRecord& reader, const std::string& path) {
  std::vector<runtime::TuningEntry> entries;
  for (const TuneRow& r : rows) {
    if (!tuned_or_recorded(r)) continue;
    std::optional<runtime::TuningEntry> entry = runtime::file_entry(gpu, r.item.problem);
    if (!entry) entry = reader.lookup(gpu, r.item.problem);
    if (entry) entries.push_back(std::move(*entry));
  }
  runtime::write_tuning_file(path, entries, "--export");
  return entries.size();
}

// --export's file must be writable where it is named: checked before anything is tuned.
void check_export_path(const std::string& path) {
  if (path.empty()) return;
  const std::filesystem::path file(path);
  const std::filesystem::path folder =
      file.parent_path().empty() ? std::filesystem::path(".") : file.parent_path();
  std::error_code error;
  if (std::filesystem::is_directory(file, error))
    throw InvalidArgument("--export", path, "must name a file, not a folder");
  if (!std::filesystem::is_directory(folder, error))
    throw InvalidArgument("--export", path,
                          fmt::format("its folder {} does not exist", folder.string()));
}

// The suite's file: --suite, or --wgrad's (one of them).
const std::string& suite_file(const TuneOptions& o) {
  if (!o.wgrad.empty() && !o.suite.empty())
    throw InvalidArgument("--wgrad", o.wgrad, "takes its rows from the file: no --suite");
  if (o.wgrad.empty() && o.suite.empty())
    throw InvalidArgument("--suite", "missing", "give the shapes: --suite FILE (or --wgrad FILE)");
  return o.wgrad.empty() ? o.suite : o.wgrad;
}

// How a row reads, as `bench` reads it. --wgrad: bf16 or fp16, into fp32 (FP8 weight gradients
// quantise both operands along the tokens, which `bench --wgrad --dtype fp8` does and tune's
// random inputs do not).
RowOptions row_options(const TuneOptions& o) {
  if (!o.wgrad.empty()) {
    check_wgrad_types(o.dtype, o.out_dtype);
    if (o.dtype == "fp8")
      throw InvalidArgument("--dtype", o.dtype,
                            "tune --wgrad takes bf16 or fp16 rows (FP8 weight gradients: "
                            "autogemm bench --wgrad FILE --dtype fp8)");
    if (o.layout != "nt" && o.layout != "tn")
      throw InvalidArgument("--layout", o.layout,
                            "--wgrad sets the layout (tn: dY and X token-major)");
  }
  return RowOptions{o.dtype, o.layout, o.out_dtype, o.accumulate, !o.wgrad.empty()};
}

void run_tune(const TuneOptions& o) {
  // Arguments first (the suite and its problems, the record), then the device.
  std::vector<bench::BenchItem> items;
  const std::string& file = suite_file(o);
  const RowOptions row = row_options(o);
  for (const bench::BenchCase& c : bench::load_suite(file))
    items.push_back({row_problem(c.m, c.n, c.k, row), c.tag});
  for (const bench::BenchItem& item : items) {
    validate(item.problem);
    bench::check_item(item);
  }
  check_export_path(o.export_path);
  if (!o.sweep_csv.empty()) check_writable("--sweep-csv", o.sweep_csv);
  if (o.sweep && !o.export_path.empty())
    throw InvalidArgument("--export", o.export_path,
                          "--sweep writes nothing to the tuning record, so there is nothing to "
                          "export");
  if (!o.sweep) require_tuning_record();

  // Without a GPU (or for a preset), as `autogemm bench`: the plan instead, exit 0.
  const GpuProfile profile = profile_gpus();
  if (profile.gpus.empty() || (!o.device.empty() && !is_ordinal(o.device))) {
    std::string note;
    GpuInfo preset;
    if (profile.gpus.empty()) {
      const std::string name = o.device.empty() || is_ordinal(o.device) ? kFallbackPreset
                                                                         : o.device;
      preset = device_preset(name);
      note = fmt::format("no GPU: {}; showing the plan for {} instead of measuring",
                         profile.unavailable_reason.empty() ? "no CUDA device found"
                                                            : profile.unavailable_reason,
                         name);
    } else {
      preset = device_preset(o.device);
      note = fmt::format("{} is a device preset, not a GPU; showing the plan for {} instead of "
                         "measuring (--device 0 tunes GPU 0)", o.device, o.device);
    }
    fmt::print("{}; nothing is tuned or written to the tuning record\n\n{}", note,
               bench::format_plan_table(bench::plan_items(items, preset)));
    return;
  }
  const GpuInfo gpu = o.device.empty() ? profile.gpus.front() : resolve_device(o.device);
  if (o.sweep) {
    SweepOptions sweep;
    sweep.sample = o.sample;
    sweep.warmup = o.warmup;
    sweep.iters = o.iters;
    sweep.seed = o.seed;
    sweep.csv = o.sweep_csv;
    fmt::print("sweeping {} rows on {} (GPU {}): {} distinct configurations of the planner's "
               "ranked list per row, {} warm-up + {} timed calls each, L2 flushed, median; "
               "nothing is written to the tuning record\n\n",
               items.size(), gpu.name, gpu.ordinal,
               o.sample > 0 ? fmt::format("up to {}", o.sample) : std::string("all"), o.warmup,
               o.iters);
    const std::vector<SweepRow> rows = run_sweep(items, gpu, sweep);
    fmt::print("{}", format_sweep(rows));
    if (!o.sweep_csv.empty())
      fmt::print("every timing with its prediction in {}\n", o.sweep_csv);
    return;
  }
  const std::shared_ptr<runtime::TuningRecord> record = writable_record(o.retune);
  cuda_check(cudaSetDevice(gpu.ordinal), "cudaSetDevice");
  fmt::print("tuning {} rows on {} (GPU {}), {} candidates and up to {} cuBLASLt algorithms "
             "each{}{}; record {}\n"
             "times: {} warm-up + {} timed calls each, L2 flushed, median; ratio: cuBLASLt's "
             "time (its heuristic's first algorithm) over the winner's\n\n",
             items.size(), gpu.name, gpu.ordinal, o.candidates, runtime::kVendorCandidates,
             o.graph ? ", timed as CUDA graph replays" : "",
             o.retune ? " (--retune: entries already there are timed again)" : "",
             record->folder().string(), o.warmup, o.iters);

  const runtime::TuningRecord reader(record->folder());
  bench::L2Flusher flusher;
  // Candidates ranked as the table (and `autogemm bench`) times them: L2 flushed before each.
  const runtime::AutotuneFlush autotune_flush([&flusher](cudaStream_t s) { flusher.flush(s); });
  cudaStream_t stream = nullptr;
  cuda_check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<TuneRow> rows;
  // A line on stderr once the run takes longer than 2 s, when stderr is a terminal.
  std::optional<bench::ProgressReporter> progress(std::in_place, std::cerr,
                                                  bench::stderr_is_terminal());
  for (const bench::BenchItem& item : items) {
    progress->update(rows.size(), items.size(), &item);
    TuneRow row;
    row.item = item;
    try {
      tune_row(row, gpu, o, stream, flusher);
      if (tuned_or_recorded(row) && row.source.rfind("file", 0) != 0 &&
          !reader.lookup(gpu, item.problem))
        row.failure = fmt::format("{} won, but the tuning record holds no entry for it (the "
                                  "warning above says why)", row.winner);
    } catch (const Error& e) {
      if (const std::string lost = bench::cuda_context_lost(); !lost.empty()) {
        (void)cudaStreamDestroy(stream);
        throw CudaError(fmt::format("tune {}x{}x{}: {} (the CUDA context is lost: {})",
                                    item.problem.m, item.problem.n, item.problem.k, e.what(),
                                    lost));
      }
      row.failure = e.what();
    }
    rows.push_back(std::move(row));
  }
  (void)cudaStreamDestroy(stream);
  progress->update(items.size(), items.size(), nullptr);
  progress.reset();

  fmt::print("{}\n{}", format_rows(rows), format_vendor_summary(rows));
  std::size_t failed = 0, recorded = 0;
  for (const TuneRow& r : rows) {
    failed += r.failure.empty() ? 0 : 1;
    recorded += tuned_or_recorded(r) ? 1 : 0;
  }
  fmt::print("{} of {} rows in the tuning record {}\n", recorded, rows.size(),
             record->folder().string());
  if (!o.export_path.empty())
    fmt::print("exported {} entries to {}\n", export_rows(rows, gpu, reader, o.export_path),
               o.export_path);
  if (failed > 0) {
    fmt::print(stderr, "autogemm: {} of {} rows FAILED (the table says why)\n", failed,
               rows.size());
    throw CLI::RuntimeError(1);
  }
}

}  // namespace

void add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Autotune a suite's shapes and keep the winners in the tuning record, which later "
              "gemm() calls use without timing again");
  cmd->add_option("--suite", o->suite, "shape suite (CSV: m,n,k[,tag])");
  cmd->add_option("--wgrad", o->wgrad,
                  "a suite of weight gradients instead (m = out features, n = in features, k = "
                  "tokens): dW += dY^T X with dY and X token-major (layout tn) into fp32, as "
                  "`autogemm bench --wgrad` runs it")
      ->type_name("FILE");
  cmd->add_option("--dtype", o->dtype, "input type: bf16, fp16 or fp8 (e4m3, block-scaled)")
      ->capture_default_str();
  cmd->add_option("--layout", o->layout, "nt, nn, tn or tt")->capture_default_str();
  cmd->add_option("--out-dtype", o->out_dtype, "D's type: bf16, fp16 or fp32 (default: the inputs')");
  cmd->add_flag("--accumulate", o->accumulate,
                "D += A B: each row reads C (beta 1), tuned as a problem of its own whose entry serves "
                "the in-place calls (C is D); timed with a C of its own, since each candidate's "
                "call would add to an in-place D again");
  cmd->add_option("--candidates", o->candidates,
                  "configurations timed per shape: the planner's best distinct ones (2..64)")
      ->capture_default_str()
      ->check(CLI::Range(2, 64));
  cmd->add_option("--device", o->device,
                  "GPU index to tune, or a preset name to show its plan; default: GPU 0, else "
                  "the plan for h100-sxm")
      ->check(device_name_check());
  cmd->add_option("--warmup", o->warmup, "untimed calls before timing the planner's choice, the winner and cuBLASLt")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  cmd->add_option("--iters", o->iters, "timed calls of each (the median is shown)")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--seed", o->seed, "random input seed")
      ->check(seed_check())
      ->capture_default_str();
  cmd->add_flag("--retune", o->retune,
                "time every shape again, replacing entries already in the record");
  cmd->add_flag("--graph", o->graph,
                "time each candidate as a CUDA graph replay of its launches (for callers who "
                "replay graphs); rows already in the record keep their entry unless --retune");
  cmd->add_flag("--sweep", o->sweep,
                "time the planner's distinct legal configurations on each row instead of "
                "tuning (--sample of them, evenly spaced through its ranking, its pick always "
                "among them) and report how far its pick is behind the best and how far each "
                "prediction was off; writes nothing to the tuning record");
  cmd->add_option("--sample", o->sample,
                  "with --sweep: configurations timed per row (0: every distinct one)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  cmd->add_option("--sweep-csv", o->sweep_csv,
                  "with --sweep: also write every timing with its prediction and the "
                  "prediction's parts to this CSV (the input of a cost-model fit), rewritten "
                  "after each row");
  cmd->add_option("--export", o->export_path,
                  "also write the rows' entries into FILE (JSON, written atomically), which "
                  "AUTOGEMM_TUNING_FILE or load_tuning_file() loads in another process")
      ->type_name("FILE");
  cmd->callback([o] { run_tune(*o); });
}

}  // namespace autogemm::cli
