// rayo/dlpack.hpp where rayo was built without dlpack/dlpack.h: both directions throw, naming it.
#include "rayo/dlpack.hpp"

#include <string>

#include "rayo/error.hpp"

namespace rayo::detail {

namespace {
[[noreturn]] void unavailable(char const* what) {
    throw Unsupported(std::string(what) +
                      ": this rayo was built without dlpack/dlpack.h (install libdlpack-dev and rebuild)");
}
}  // namespace

DLManagedTensor* to_dlpack(Storage const&, std::size_t, DType, Shape const&) { unavailable("to_dlpack"); }

DLPackView from_dlpack(DLManagedTensor*, DType, Shape&) { unavailable("from_dlpack"); }

}  // namespace rayo::detail
