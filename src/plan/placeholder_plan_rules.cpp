// TEMPORARY: lets the tree link while src/plan is written. Delete each function as it is implemented.
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "plan/tma_rules.hpp"
#include "plan/wgmma_rules.hpp"
namespace autogemm {
namespace plan {
int wgmma_k(DType) { throw Error("not yet"); }
std::string wgmma_violation(const WgmmaShape&, ComputeCapability) { throw Error("not yet"); }
std::vector<int> wgmma_legal_n(DType) { throw Error("not yet"); }
int select_wgmma_n(int, DType) { throw Error("not yet"); }
int swizzle_bytes(Swizzle) { throw Error("not yet"); }
int descriptor_layout_code(Swizzle) { throw Error("not yet"); }
uint64_t MatrixDescriptor::encode() const { throw Error("not yet"); }
MatrixDescriptor make_descriptor(uint32_t, Swizzle, bool, int, int, int) { throw Error("not yet"); }
std::string tma_violation(const TmaDescription&) { throw Error("not yet"); }
SwizzleChoice recommend_swizzle(int, int) { throw Error("not yet"); }
}  // namespace plan
}  // namespace autogemm
