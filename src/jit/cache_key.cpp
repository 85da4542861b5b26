// cache_key: XXH3-128 over everything that determines the cubin (jit/jit.hpp).
#include <xxhash.h>

#include <cstdint>
#include <string_view>

#include "autogemm/errors.hpp"
#include "jit/embedded.hpp"
#include "jit/jit.hpp"
#include "jit/nvrtc_options.hpp"

namespace autogemm::jit {

namespace {

// Bump when the set or order of hashed fields changes, so old keys can never collide with new.
// v2: the toolchain identity replaced NVRTC's major.minor.
constexpr std::string_view kKeySchema = "autogemm-jit-key-v2";

// Streams length-prefixed fields into XXH3-128: the prefix makes ("ab","c") and ("a","bc")
// hash differently.
class KeyHasher {
 public:
  KeyHasher() {
    if (state_ == nullptr || XXH3_128bits_reset(state_) != XXH_OK)
      throw Error("XXH3_128bits_reset failed (out of memory?)");
  }
  ~KeyHasher() { XXH3_freeState(state_); }
  KeyHasher(const KeyHasher&) = delete;
  KeyHasher& operator=(const KeyHasher&) = delete;

  void add(std::string_view field) {
    const std::uint64_t length = field.size();
    XXH3_128bits_update(state_, &length, sizeof length);
    XXH3_128bits_update(state_, field.data(), field.size());
  }

  // 32 lower-case hex digits of the canonical (big-endian) form of the hash.
  std::string hex() const {
    XXH128_canonical_t canonical;
    XXH128_canonicalFromHash(&canonical, XXH3_128bits_digest(state_));
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out;
    for (unsigned char byte : canonical.digest) {
      out.push_back(kDigits[byte >> 4]);
      out.push_back(kDigits[byte & 15]);
    }
    return out;
  }

 private:
  XXH3_state_t* state_ = XXH3_createState();
};

}  // namespace

// The embedded sources never change within a process: hash them once.
const std::string& embedded_sources_digest() {
  static const std::string digest = [] {
    KeyHasher hasher;
    for (std::size_t i = 0; i < kNumEmbeddedFiles; ++i) {
      hasher.add(kEmbeddedFiles[i].name);
      hasher.add(kEmbeddedFiles[i].text);
    }
    return hasher.hex();
  }();
  return digest;
}

std::string cache_key(const KernelSource& src) { return cache_key(src, toolchain_identity()); }

std::string cache_key(const KernelSource& src, std::string_view toolchain) {
  KeyHasher hasher;
  hasher.add(kKeySchema);
  hasher.add(src.source);
  hasher.add(embedded_sources_digest());
  hasher.add(toolchain);
  // The full option list (arch, standard, include dirs, extra options), in order.
  const std::vector<std::string> options = nvrtc_options(src);
  hasher.add(std::to_string(options.size()));
  for (const std::string& option : options) hasher.add(option);
  hasher.add(src.arch);
  hasher.add(src.kernel_name);
  return hasher.hex();
}

}  // namespace autogemm::jit
