#include "rayo/shape.hpp"

namespace rayo {

void Shape::validate() {
    std::size_t n = 1;
    // Byte sizes are computed from numel with up to 8-byte elements, so cap it there.
    constexpr std::size_t limit = std::numeric_limits<std::size_t>::max() / 16;
    for (auto d : dims_) {
        if (d < 0) throw ShapeError("shape " + to_string() + " has a negative dimension");
        if (d != 0 && n > limit / static_cast<std::size_t>(d))
            throw ShapeError("shape " + to_string() + " has more elements than can be addressed");
        n *= static_cast<std::size_t>(d);
    }
    numel_ = n;
}

std::size_t Shape::axis(int i) const {
    auto const r = static_cast<long long>(rank());
    long long const a = i < 0 ? i + r : i;
    if (a < 0 || a >= r)
        throw ShapeError("axis " + std::to_string(i) + " is out of range for shape " + to_string() + " (rank " +
                         std::to_string(r) + ")");
    return static_cast<std::size_t>(a);
}

std::string Shape::to_string() const {
    std::string s = "[";
    for (std::size_t i = 0; i < dims_.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(dims_[i]);
    }
    return s + "]";
}

}  // namespace rayo
