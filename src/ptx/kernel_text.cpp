// Kernel: PTX text. Registers are declared per type as ranges (.reg .f32 %f<12>;), labels are
// $L_<n>, float immediates are hex bit patterns.
#include <array>
#include <bit>
#include <cstdio>
#include <string>

#include "rayo/ptx/kernel.hpp"

namespace rayo::ptx {

namespace {

// Distinct spellings per type, so a range declaration of one type never names another's register.
std::string_view register_prefix(Type t) {
    switch (t) {
        case Type::pred: return "%p";
        case Type::b16: return "%bh";
        case Type::u16: return "%rh";
        case Type::s16: return "%sh";
        case Type::b32: return "%b";
        case Type::u32: return "%r";
        case Type::s32: return "%s";
        case Type::b64: return "%bd";
        case Type::u64: return "%rd";
        case Type::s64: return "%sd";
        case Type::f16: return "%hf";
        case Type::f16x2: return "%hx";
        case Type::bf16: return "%hb";
        case Type::bf16x2: return "%hy";
        case Type::f32: return "%f";
        case Type::f64: return "%fd";
        default: return "%x";
    }
}

// PTX has no .bf16 register declarations: bf16 values live in .b16 (and pairs in .b32) registers,
// while the builder keeps their type for the verifier.
Type declared_type(Type t) {
    if (t == Type::bf16) return Type::b16;
    if (t == Type::bf16x2) return Type::b32;
    return t;
}

}  // namespace

std::string float_immediate(double value, Type type) {
    char text[32];
    if (type == Type::f64) {
        std::snprintf(text, sizeof text, "0d%016llX",
                      static_cast<unsigned long long>(std::bit_cast<std::uint64_t>(value)));
    } else {
        std::snprintf(text, sizeof text, "0f%08X",
                      static_cast<unsigned>(std::bit_cast<std::uint32_t>(static_cast<float>(value))));
    }
    return text;
}

std::string Kernel::register_name(Reg r) const {
    if (r.kernel() != serial_ || r.id() >= reg_types_.size()) return "<foreign register>";
    return std::string(register_prefix(r.type())) + std::to_string(reg_ordinals_[r.id()]);
}

std::string Kernel::address_text(Address const& a) const {
    std::string base;
    if (auto const* r = std::get_if<Reg>(&a.base))
        base = register_name(*r);
    else
        base = std::get<Symbol>(a.base).name;
    if (a.offset == 0) return "[" + base + "]";
    return "[" + base + "+" + std::to_string(a.offset) + "]";
}

std::string Kernel::operand_text(OperandUse const& use) const {
    if (auto const* r = std::get_if<RegUse>(&use)) return register_name(r->reg);
    if (auto const* imm = std::get_if<ImmUse>(&use)) {
        if (imm->value.is_float()) return float_immediate(imm->value.floating(), imm->type);
        return std::to_string(imm->value.integer());
    }
    if (auto const* a = std::get_if<AddressUse>(&use)) return address_text(a->address);
    if (auto const* v = std::get_if<VectorUse>(&use)) {
        std::string s = "{";
        for (std::size_t i = 0; i < v->elements.size(); ++i) s += (i ? ", " : "") + register_name(v->elements[i].reg);
        return s + "}";
    }
    if (auto const* l = std::get_if<LabelUse>(&use)) return "$L_" + std::to_string(l->label.id());
    if (auto const* t = std::get_if<TensorAddressUse>(&use)) {
        std::string s = "[";
        s.append(register_name(t->map.reg)).append(", {");
        for (std::size_t i = 0; i < t->coordinates.size(); ++i)
            s.append(i ? ", " : "").append(register_name(t->coordinates[i].reg));
        return s.append("}]");
    }
    return std::get<TextUse>(use).text;
}

std::string Kernel::describe(Instruction const& in) const {
    if (in.kind == Instruction::Kind::label) return "$L_" + std::to_string(in.placed.id()) + ":";
    if (in.kind == Instruction::Kind::comment) return "// " + in.opcode;
    std::string s;
    if (in.guard) s += std::string(in.guard->when ? "@" : "@!") + register_name(in.guard->predicate) + " ";
    s += in.opcode;
    for (std::size_t i = 0; i < in.operands.size(); ++i) s += (i ? ", " : " ") + operand_text(in.operands[i]);
    return s + ";";
}

std::string Kernel::emit_module_scope() const {
    if (!dynamic_shared_alignment_) return {};
    return ".extern .shared .align " + std::to_string(*dynamic_shared_alignment_) + " .b8 " + name_ +
           "_dynamic_shared[];\n";
}

std::string Kernel::emit_entry(Target target) const {
    verify(target);
    std::string s = ".visible .entry " + name_ + "(";
    for (std::size_t i = 0; i < params_.size(); ++i) {
        s.append(i ? "," : "").append("\n\t.param ");
        if (params_[i].bytes != 0)
            s.append(".align 64 .b8 ")
                .append(params_[i].name)
                .append("[")
                .append(std::to_string(params_[i].bytes))
                .append("]");
        else
            s.append(".").append(name_of(params_[i].type)).append(" ").append(params_[i].name);
    }
    s += params_.empty() ? ")\n" : "\n)\n";
    if (max_threads_ != 0) s += ".maxntid " + std::to_string(max_threads_) + ", 1, 1\n";
    if (max_registers_ != 0) s += ".maxnreg " + std::to_string(max_registers_) + "\n";
    if (cluster_[0] != 0)
        s += ".reqnctapercluster " + std::to_string(cluster_[0]) + ", " + std::to_string(cluster_[1]) + ", " +
             std::to_string(cluster_[2]) + "\n";
    s += "{\n";
    std::array<std::uint32_t, 32> counts{};
    for (Type t : reg_types_) ++counts[static_cast<std::size_t>(t)];
    for (std::size_t t = 0; t < counts.size(); ++t) {
        if (counts[t] == 0) continue;
        auto const type = static_cast<Type>(t);
        s += "\t.reg ." + std::string(name_of(declared_type(type))) + " " + std::string(register_prefix(type)) + "<" +
             std::to_string(counts[t]) + ">;\n";
    }
    for (auto const& sh : shared_)
        s += "\t.shared .align " + std::to_string(sh.alignment) + " .b8 " + sh.name + "[" +
             std::to_string(sh.count * static_cast<std::size_t>(bytes_of(sh.element))) + "];\n";
    s += "\n";
    for (auto const& in : body_) {
        if (in.kind != Instruction::Kind::label) s += '\t';
        s += describe(in);
        s += '\n';
    }
    // Falling off the end is not allowed in PTX: close with ret unless the body already does.
    if (body_.empty() || body_.back().kind != Instruction::Kind::operation || body_.back().opcode != "ret" ||
        body_.back().guard)
        s += "\tret;\n";
    return s + "}\n";
}

std::string Kernel::emit(Target target, std::optional<IsaVersion> isa) const {
    IsaVersion const v = isa.value_or(default_isa(target));
    if (v < minimum_isa(target))
        throw BuildError("ptx kernel '" + name_ + "': PTX ISA " + to_string(v) + " does not know " +
                         std::string(to_string(target)) + " (needs " + to_string(minimum_isa(target)) + " or newer)");
    return "//\n// Generated by rayo's PTX builder\n//\n.version " + to_string(v) + "\n.target " +
           std::string(to_string(target)) + "\n.address_size 64\n\n" + emit_module_scope() + emit_entry(target);
}

}  // namespace rayo::ptx
