#include "autogemm/version.hpp"

namespace autogemm {
std::string version() { return AUTOGEMM_VERSION_STRING; }
}  // namespace autogemm
