#pragma once
// The CUDA ordinals a multi-GPU call is given (measure_topology, MultiGpuComm::local,
// run_gemm_schedule): checked the same way everywhere, before any GPU work.
#include <string>
#include <vector>

namespace autogemm::multi {

// Throws InvalidArgument(argument, ...) for an empty list or an ordinal given twice (one rank,
// one stream per GPU). Pure: no device query.
void check_device_list_shape(const std::string& argument, const std::vector<int>& devices);

// check_device_list_shape, then: NoDevice when no GPU is usable, InvalidArgument naming the
// first ordinal outside 0 .. count-1 ("this machine has 1 CUDA device(s), ordinals 0 to 0").
void check_device_list(const std::string& argument, const std::vector<int>& devices);

// "0,1,3": the list as the messages print it.
std::string device_list_text(const std::vector<int>& devices);

}  // namespace autogemm::multi
