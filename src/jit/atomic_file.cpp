#include "jit/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <random>
#include <thread>

namespace autogemm::jit {

namespace {

// Processes differ by pid, threads by id, and the random part covers pid reuse (a writer
// killed mid-write leaves its temporary behind).
std::string temporary_name(const std::string& stem, std::string_view marker) {
  thread_local std::mt19937_64 random(std::random_device{}() ^
                                      std::hash<std::thread::id>{}(std::this_thread::get_id()));
  return fmt::format("{}{}{}-{:x}-{:016x}", stem, marker, static_cast<long>(::getpid()),
                     std::hash<std::thread::id>{}(std::this_thread::get_id()), random());
}

bool write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string write_file_atomically(const std::filesystem::path& final_path, std::string_view bytes,
                                  const std::string& stem, std::string_view marker) {
  const std::filesystem::path folder = final_path.parent_path();
  const std::filesystem::path temporary = folder / temporary_name(stem, marker);
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return fmt::format("cannot create {}: {}", temporary.string(), std::strerror(errno));
  // fsync before rename: otherwise a crash can leave the new name pointing at a file whose
  // data never reached the disk (rename is atomic for the name, not for the contents).
  bool ok = write_all(fd, bytes);
  int error = ok ? 0 : errno;
  if (ok && ::fsync(fd) != 0) ok = false, error = errno;
  if (::close(fd) != 0 && ok) ok = false, error = errno;
  if (ok && ::rename(temporary.c_str(), final_path.c_str()) != 0) ok = false, error = errno;
  if (!ok) {
    ::unlink(temporary.c_str());
    return fmt::format("cannot write {}: {}", final_path.string(), std::strerror(error));
  }
  // Persist the new directory entry too (best effort: some file systems refuse directory fsync).
  if (const int dir = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
  return {};
}

int remove_stale_temporaries(const std::filesystem::path& folder, std::string_view marker,
                             std::chrono::seconds age) {
  const auto now = std::filesystem::file_time_type::clock::now();
  std::error_code error;
  int removed = 0;
  for (auto it = std::filesystem::directory_iterator(folder, error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    if (it->path().filename().string().find(marker) == std::string::npos) continue;
    std::error_code ignored;
    const auto written = std::filesystem::last_write_time(it->path(), ignored);
    if (ignored || now - written < age) continue;
    if (std::filesystem::remove(it->path(), ignored)) ++removed;
  }
  return removed;
}

}  // namespace autogemm::jit
