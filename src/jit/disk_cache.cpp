// DiskCache: atomic, verified cubin files (format: jit/disk_cache.hpp).
#include "jit/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string_view>
#include <thread>
#include <vector>

#include "jit/atomic_file.hpp"
#include "jit/log.hpp"

namespace autogemm::jit {

namespace {

// Temporaries are named "<key>.cubin.tmp-<pid>-<thread>-<random>" (atomic_file.hpp).
constexpr std::string_view kTemporaryMarker = ".cubin.tmp-";

constexpr char kMagic[8] = {'A', 'G', 'M', 'J', 'I', 'T', 'C', '1'};

// Native byte order and widths: the cache is private to one machine (keys include the NVRTC
// version, and a cubin only runs on the GPU it was built for anyway).
struct EntryHeader {
  char magic[8];
  std::uint32_t format_version;
  std::uint32_t key_bytes;
  std::uint32_t lowered_name_bytes;
  std::uint32_t log_bytes;
  std::uint64_t cubin_bytes;
  std::uint64_t payload_bytes;  // the sum of the four lengths above
  std::uint64_t checksum;       // XXH3-64 of the header bytes before this field, then payload
};
static_assert(sizeof(EntryHeader) == 48, "EntryHeader must have no padding");
constexpr std::size_t kChecksummedHeaderBytes = offsetof(EntryHeader, checksum);

std::uint64_t entry_checksum(const EntryHeader& header, std::string_view payload) {
  XXH3_state_t* state = XXH3_createState();
  XXH3_64bits_reset(state);
  XXH3_64bits_update(state, &header, kChecksummedHeaderBytes);
  XXH3_64bits_update(state, payload.data(), payload.size());
  const std::uint64_t sum = XXH3_64bits_digest(state);
  XXH3_freeState(state);
  return sum;
}

std::string errno_text(int error) { return std::strerror(error); }

// Reads the whole file; nullopt with errno kept when it cannot be opened or read.
std::optional<std::string> read_file(const std::filesystem::path& path, int* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = errno;
    return std::nullopt;
  }
  std::string bytes;
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = errno;
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    bytes.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return bytes;
}

std::string decode_entry(std::string_view bytes, const std::string& key, CompiledKernel* kernel) {
  EntryHeader header;
  if (bytes.size() < sizeof header)
    return fmt::format("{} bytes, shorter than the {}-byte header", bytes.size(), sizeof header);
  std::memcpy(&header, bytes.data(), sizeof header);
  if (std::memcmp(header.magic, kMagic, sizeof kMagic) != 0) return "bad magic";
  if (header.format_version != kDiskCacheFormatVersion)
    return fmt::format("format version {}, expected {}", header.format_version,
                       kDiskCacheFormatVersion);
  const std::uint64_t fields = std::uint64_t{header.key_bytes} + header.lowered_name_bytes +
                               header.log_bytes + header.cubin_bytes;
  if (fields != header.payload_bytes) return "field lengths disagree with the payload length";
  const std::string_view payload = bytes.substr(sizeof header);
  if (payload.size() != header.payload_bytes)
    return fmt::format("payload is {} bytes, header says {} (truncated?)", payload.size(),
                       header.payload_bytes);
  if (entry_checksum(header, payload) != header.checksum) return "checksum mismatch";
  std::size_t at = 0;
  auto take = [&](std::uint64_t length) {
    const std::string_view field = payload.substr(at, length);
    at += length;
    return field;
  };
  if (take(header.key_bytes) != key) return "entry holds another key";
  kernel->lowered_name = std::string(take(header.lowered_name_bytes));
  kernel->log = std::string(take(header.log_bytes));
  const std::string_view cubin = take(header.cubin_bytes);
  kernel->cubin.assign(cubin.begin(), cubin.end());
  if (kernel->cubin.empty() || kernel->lowered_name.empty()) return "empty cubin or name";
  kernel->cache_key = key;
  kernel->from_disk_cache = true;
  return {};
}

std::string encode_entry(const CompiledKernel& kernel) {
  EntryHeader header{};
  std::memcpy(header.magic, kMagic, sizeof kMagic);
  header.format_version = kDiskCacheFormatVersion;
  header.key_bytes = static_cast<std::uint32_t>(kernel.cache_key.size());
  header.lowered_name_bytes = static_cast<std::uint32_t>(kernel.lowered_name.size());
  header.log_bytes = static_cast<std::uint32_t>(kernel.log.size());
  header.cubin_bytes = kernel.cubin.size();
  std::string payload;
  payload.reserve(kernel.cache_key.size() + kernel.lowered_name.size() + kernel.log.size() +
                  kernel.cubin.size());
  payload += kernel.cache_key;
  payload += kernel.lowered_name;
  payload += kernel.log;
  payload.append(kernel.cubin.data(), kernel.cubin.size());
  header.payload_bytes = payload.size();
  header.checksum = entry_checksum(header, payload);
  std::string bytes(reinterpret_cast<const char*>(&header), sizeof header);
  return bytes + payload;
}

}  // namespace

DiskCacheRoot disk_cache_root_from_env() {
  if (const char* off = std::getenv("AUTOGEMM_DISABLE_DISK_CACHE");
      off != nullptr && std::string_view(off) == "1")
    return {std::nullopt, "AUTOGEMM_DISABLE_DISK_CACHE=1", true, "AUTOGEMM_DISABLE_DISK_CACHE",
            "1"};
  if (const char* dir = std::getenv("AUTOGEMM_CACHE_DIR"); dir != nullptr) {
    if (*dir == '\0')
      return {std::nullopt, "AUTOGEMM_CACHE_DIR is set and empty", true, "AUTOGEMM_CACHE_DIR",
              "\"\""};
    return {std::filesystem::path(dir), "", false, "AUTOGEMM_CACHE_DIR", dir};
  }
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return {std::filesystem::path(xdg) / "autogemm", "", false, "XDG_CACHE_HOME", xdg};
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return {std::filesystem::path(home) / ".cache" / "autogemm", "", false, "HOME", home};
  return {std::nullopt, "neither AUTOGEMM_CACHE_DIR, XDG_CACHE_HOME nor HOME is set", false,
          "HOME", "(unset)"};
}

DiskCache::DiskCache(const std::filesystem::path& root)
    // fmt, not "v" + std::to_string(): GCC 12 warns (-Wrestrict) on that concatenation inlined
    // here, a false positive in libstdc++'s insert.
    : directory_(root / fmt::format("v{}", kDiskCacheFormatVersion)) {
  std::error_code error;
  std::filesystem::create_directories(directory_, error);
  if (error || !std::filesystem::is_directory(directory_, error)) {
    fall_back(fmt::format("cannot create cache directory {}: {}", directory_.string(),
                          error ? error.message() : "not a directory"),
              /*keep_reading=*/false);
    return;
  }
  // access() answers for the real user, as open() will (root passes regardless of mode).
  if (::access(directory_.c_str(), W_OK | X_OK) != 0) {
    fall_back(fmt::format("cache directory {} is not writable ({}); its existing entries are "
                          "still used", directory_.string(), errno_text(errno)),
              /*keep_reading=*/true);
    return;
  }
  remove_stale_temporaries();
}

// Temporaries are named "<key>.cubin.tmp-<pid>-<thread>-<random>" (temporary_name). A young
// one may be another process's write in progress, so only old ones go. Best effort: another
// process may remove the same file first.
void DiskCache::remove_stale_temporaries() {
  if (const int removed = jit::remove_stale_temporaries(directory_, kTemporaryMarker,
                                                        kStaleTemporaryAge);
      removed > 0)
    log(4, "kernel disk cache: removed {} temporary file(s) of writers that did not finish",
        removed);
}

std::string DiskCache::directory() const { return readable_ ? directory_.string() : ""; }

std::filesystem::path DiskCache::entry_path(const std::string& key) const {
  return directory_ / (key + ".cubin");
}

void DiskCache::fall_back(const std::string& reason, bool keep_reading) {
  writable_ = false;
  if (!keep_reading) readable_ = false;
  fallback_reason_ = reason;
  std::call_once(warn_once_, [&] {
    ++fallback_warnings_;
    log(2, "kernel disk cache: {}; newly compiled kernels are cached in memory only",
        reason);
  });
}

void DiskCache::skip_entry(const std::string& reason) {
  ++failed_writes_;
  log(2, "kernel disk cache: {}; this kernel is kept in memory only, other entries are still "
      "written", reason);
}

std::optional<CompiledKernel> DiskCache::load(const std::string& key) const {
  if (!readable_) return std::nullopt;
  const std::filesystem::path path = entry_path(key);
  int error = 0;
  const std::optional<std::string> bytes = read_file(path, &error);
  if (!bytes) {
    if (error != ENOENT) log(3, "kernel disk cache: cannot read {}: {}", path.string(),
                             errno_text(error));
    return std::nullopt;
  }
  CompiledKernel kernel;
  if (const std::string invalid = decode_entry(*bytes, key, &kernel); !invalid.empty()) {
    ++rejected_entries_;
    log(2, "kernel disk cache: entry {} is invalid ({}); removing it and recompiling",
        path.string(), invalid);
    std::error_code ignored;  // another process may have replaced or removed it already
    std::filesystem::remove(path, ignored);
    return std::nullopt;
  }
  return kernel;
}

void DiskCache::store(const CompiledKernel& kernel) {
  if (!writable_ || kernel.cache_key.empty()) return;
  const std::string bytes = encode_entry(kernel);
  const std::filesystem::path final_path = entry_path(kernel.cache_key);
  if (auto why = write_file_atomically(final_path, bytes, kernel.cache_key, kTemporaryMarker);
      !why.empty()) {
    skip_entry(why);
    return;
  }
  log(5, "kernel disk cache: wrote {} ({} bytes)", final_path.string(), bytes.size());
}

}  // namespace autogemm::jit
