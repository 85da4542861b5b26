#pragma once
#include <string>
namespace autogemm {
std::string version();   // "0.1.0"
}
