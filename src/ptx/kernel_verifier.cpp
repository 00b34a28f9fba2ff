// Kernel::verify: the checks that make a bad kernel fail in C++ with a precise message instead of
// in ptxas or the driver's JIT with a line number into generated text.
#include <cmath>
#include <string>
#include <vector>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx {

namespace {

std::string type_name(Type t) {
    std::string s(1, '.');
    s += name_of(t);
    return s;
}

// Why a register of `actual` cannot stand for an operand of `expected` (empty when it can).
std::string misfit(Type expected, Type actual, Fit fit) {
    bool const ok = fit == Fit::widening ? register_fits_widening(expected, actual) : register_fits(expected, actual);
    if (ok) return {};
    std::string need;
    switch (kind_of(expected)) {
        case TypeKind::predicate: need = "a .pred register"; break;
        case TypeKind::bits: need = "a " + std::to_string(bits_of(expected)) + "-bit register"; break;
        case TypeKind::unsigned_int:
        case TypeKind::signed_int:
            need = "a " + std::to_string(bits_of(expected)) + "-bit integer or bit register";
            if (fit == Fit::widening) need += " (or a wider integer one)";
            break;
        case TypeKind::floating:
            need = "a " + type_name(expected) + " or .b" + std::to_string(bits_of(expected)) + " register";
            break;
    }
    return type_name(expected) + " needs " + need + ", got " + type_name(actual);
}

std::string immediate_misfit(Imm const& imm, Type type) {
    if (type == Type::pred) return "a predicate operand cannot be an immediate";
    if (is_float(type)) {
        if (imm.is_integer())
            return "integer immediate " + std::to_string(imm.integer()) + " given for a " + type_name(type) +
                   " operand (write it as a float)";
        if (type != Type::f32 && type != Type::f64)
            return "float immediates exist for .f32 and .f64 only; move the bits of a " + type_name(type) +
                   " constant with mov.b16/mov.b32";
        double const v = imm.floating();
        if (type == Type::f32 && !std::isnan(v) && static_cast<double>(static_cast<float>(v)) != v)
            return "immediate " + std::to_string(v) + " is not exactly representable as .f32 (pass a float)";
        return {};
    }
    if (imm.is_float()) return "float immediate given for a " + type_name(type) + " operand";
    std::int64_t const v = imm.integer();
    int const bits = bits_of(type);
    if (bits < 64) {
        // Unsigned operands take negative values as their two's complement bits (-1 for 0xffffffff).
        std::int64_t const lo = -(std::int64_t{1} << (bits - 1));
        std::int64_t const hi =
            kind_of(type) == TypeKind::signed_int ? (std::int64_t{1} << (bits - 1)) - 1 : (std::int64_t{1} << bits) - 1;
        if (v < lo || v > hi)
            return "immediate " + std::to_string(v) + " does not fit a " + type_name(type) + " operand";
    }
    return {};
}

}  // namespace

void Kernel::verify(Target target) const {
    std::vector<bool> written(reg_types_.size(), false);
    std::vector<bool> placed(label_count_, false);
    for (auto const& in : body_)
        if (in.kind == Instruction::Kind::label) placed[in.placed.id()] = true;

    auto fail = [&](std::size_t index, Instruction const& in, std::string const& why) {
        throw BuildError("ptx kernel '" + name_ + "', instruction " + std::to_string(index) + " `" + describe(in) +
                         "`: " + why);
    };
    auto own = [&](Reg r) { return r.kernel() == serial_ && r.id() < reg_types_.size(); };
    auto check_read = [&](std::size_t i, Instruction const& in, Reg r, std::string const& what) {
        if (!own(r)) fail(i, in, what + " is a register of another kernel (or a default-constructed Reg)");
        if (!written[r.id()]) fail(i, in, what + " " + register_name(r) + " is read before any instruction writes it");
    };

    if (cluster_[0] != 0 && compute_capability(target) < 90)
        throw BuildError("ptx kernel '" + name_ + "': thread-block clusters need sm_90 or newer; the module targets " +
                         std::string(to_string(target)));
    for (std::size_t i = 0; i < body_.size(); ++i) {
        Instruction const& in = body_[i];
        if (in.kind != Instruction::Kind::operation) continue;
        if (in.requires_target.compute_capability > compute_capability(target))
            fail(i, in,
                 "needs sm_" + std::to_string(in.requires_target.compute_capability) +
                     " or newer; the module targets " + std::string(to_string(target)));
        if (in.requires_target.architecture_specific && target != Target::sm_90a)
            fail(i, in, "exists only on sm_90a; the module targets " + std::string(to_string(target)));
        if (in.guard) {
            check_read(i, in, in.guard->predicate, "the guard");
            if (in.guard->predicate.type() != Type::pred) fail(i, in, "the guard is not a .pred register");
        }
        // Reads are checked against what earlier instructions wrote, then this one's writes count.
        std::vector<Reg> writes;
        auto use_reg = [&](RegUse const& u, std::string const& what) {
            if (!own(u.reg)) fail(i, in, what + " is a register of another kernel (or a default-constructed Reg)");
            if (auto why = misfit(u.expected, reg_types_[u.reg.id()], u.fit); !why.empty())
                fail(i, in, what + " " + register_name(u.reg) + ": " + why);
            if (u.access != Access::write) check_read(i, in, u.reg, what);
            if (u.access != Access::read) writes.push_back(u.reg);
        };
        for (std::size_t k = 0; k < in.operands.size(); ++k) {
            std::string const what = "operand " + std::to_string(k + 1);
            OperandUse const& use = in.operands[k];
            if (auto const* r = std::get_if<RegUse>(&use)) {
                use_reg(*r, what);
            } else if (auto const* imm = std::get_if<ImmUse>(&use)) {
                if (auto why = immediate_misfit(imm->value, imm->type); !why.empty()) fail(i, in, what + ": " + why);
            } else if (auto const* v = std::get_if<VectorUse>(&use)) {
                for (std::size_t e = 0; e < v->elements.size(); ++e)
                    use_reg(v->elements[e], what + " element " + std::to_string(e));
            } else if (auto const* a = std::get_if<AddressUse>(&use)) {
                if (auto const* base = std::get_if<Reg>(&a->address.base)) {
                    check_read(i, in, *base, what + " (the address)");
                    Type const t = reg_types_[base->id()];
                    if (is_float(t) || t == Type::pred || bits_of(t) < 32)
                        fail(i, in,
                             what + ": address register " + register_name(*base) + " is " + type_name(t) +
                                 "; addresses are 32- or 64-bit integers");
                    // (Copies from global to shared memory take both kinds of address: not checked.)
                    bool const needs_64 = in.opcode.find(".global") != std::string::npos &&
                                          in.opcode.find(".shared") == std::string::npos;
                    if (needs_64 && bits_of(t) != 64)
                        fail(i, in,
                             what + ": global address register " + register_name(*base) + " is " + type_name(t) +
                                 "; global addresses are 64-bit");
                }
            } else if (auto const* t = std::get_if<TensorAddressUse>(&use)) {
                use_reg(t->map, what + " (the tensor map)");
                for (std::size_t e = 0; e < t->coordinates.size(); ++e)
                    use_reg(t->coordinates[e], what + " coordinate " + std::to_string(e));
            } else if (auto const* l = std::get_if<LabelUse>(&use)) {
                if (l->label.kernel() != serial_ || l->label.id() >= label_count_)
                    fail(i, in, "branch to a label of another kernel");
                if (!placed[l->label.id()])
                    fail(i, in, "branch to $L_" + std::to_string(l->label.id()) + ", which is never placed");
            }
        }
        for (Reg r : writes) written[r.id()] = true;
    }
}

}  // namespace rayo::ptx
