// Kernel: the emitters. Each records an Instruction with the operand types the PTX ISA requires;
// checking happens in verify() (kernel_verifier.cpp), text in kernel_text.cpp.
#include "rayo/ptx/kernel.hpp"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <string>
#include <utility>

namespace rayo::ptx {

namespace {

std::atomic<std::uint32_t> next_kernel_serial{1};

bool is_identifier(std::string_view s) {
    if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
    for (char c : s)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$')) return false;
    return true;
}

OperandUse read(Operand const& o, Type type, Fit fit = Fit::exact) {
    if (o.is_reg()) return RegUse{o.reg(), type, Access::read, fit};
    return ImmUse{o.imm(), type};
}
OperandUse write(Reg r, Type type, Fit fit = Fit::exact) { return RegUse{r, type, Access::write, fit}; }
OperandUse text(std::string s) { return TextUse{std::move(s)}; }

std::string type_suffix(Type t) { return "." + std::string(name_of(t)); }

// Integer instructions spell .b types as .u (add.b32 does not exist).
Type arithmetic_type(Type t) {
    if (kind_of(t) != TypeKind::bits) return t;
    switch (bits_of(t)) {
        case 16: return Type::u16;
        case 32: return Type::u32;
        default: return Type::u64;
    }
}
Type bits_type(Type t) {
    switch (bits_of(t)) {
        case 1: return Type::pred;
        case 16: return Type::b16;
        case 32: return Type::b32;
        default: return Type::b64;
    }
}
Type signed_type(Type t) {
    switch (bits_of(t)) {
        case 16: return Type::s16;
        case 32: return Type::s32;
        default: return Type::s64;
    }
}
Type wide_type(Type t) {
    switch (t) {
        case Type::u16: return Type::u32;
        case Type::s16: return Type::s32;
        case Type::u32:
        case Type::b32: return Type::u64;
        case Type::s32: return Type::s64;
        default: throw BuildError("mul.wide: a ." + std::string(name_of(t)) + " operand has no wider integer type");
    }
}

std::string_view space_name(Space s) {
    switch (s) {
        case Space::global: return ".global";
        case Space::shared: return ".shared";
        case Space::local: return ".local";
        case Space::param: return ".param";
        case Space::constant: return ".const";
        case Space::generic: return "";
    }
    return "";
}
std::string_view cache_name(Cache c) {
    constexpr std::string_view names[] = {"", ".ca", ".cg", ".cs", ".lu", ".cv", ".nc", ".wb", ".wt"};
    return names[static_cast<int>(c)];
}
std::string_view rounding_name(Rounding r) {
    constexpr std::string_view names[] = {"", ".rn", ".rz", ".rm", ".rp", ".rni", ".rzi", ".rmi", ".rpi"};
    return names[static_cast<int>(r)];
}
std::string_view cmp_name(Cmp c) {
    constexpr std::string_view names[] = {"eq", "ne", "lt", "le", "gt", "ge"};
    return names[static_cast<int>(c)];
}
std::string_view special_name(Special s) {
    constexpr std::string_view names[] = {"%tid.x",   "%tid.y",    "%tid.z",           "%ntid.x",
                                          "%ntid.y",  "%ntid.z",   "%ctaid.x",         "%ctaid.y",
                                          "%ctaid.z", "%nctaid.x", "%nctaid.y",        "%nctaid.z",
                                          "%laneid",  "%warpid",   "%cluster_ctarank", "%cluster_nctarank"};
    return names[static_cast<int>(s)];
}
std::string_view atomic_name(AtomicOp op) {
    constexpr std::string_view names[] = {"add", "min", "max", "exch", "and", "or", "xor", "inc", "dec"};
    return names[static_cast<int>(op)];
}

void require_float(std::string_view what, Reg r) {
    if (!is_float(r.type()))
        throw BuildError(std::string(what) + " needs a float register, got ." + std::string(name_of(r.type())));
}
void require_integer(std::string_view what, Reg r) {
    if (is_float(r.type()) || r.type() == Type::pred)
        throw BuildError(std::string(what) + " needs an integer or bit register, got ." +
                         std::string(name_of(r.type())));
}

// The rounding a conversion needs when the caller left it out: C's (round to nearest for results
// that are floats, truncation toward zero for float → integer).
Rounding conversion_rounding(Type to, Type from, Rounding asked) {
    if (asked != Rounding::none) return asked;
    if (is_float(to) && is_float(from)) return bits_of(to) < bits_of(from) ? Rounding::rn : Rounding::none;
    if (is_float(to)) return Rounding::rn;
    if (is_float(from)) return Rounding::rzi;
    return Rounding::none;
}

}  // namespace

Kernel::Kernel(std::string name) : serial_(next_kernel_serial.fetch_add(1)), name_(std::move(name)) {
    if (!is_identifier(name_)) throw BuildError("ptx: kernel name '" + name_ + "' is not a PTX identifier");
}

void Kernel::push(Instruction in) {
    if (guard_ && in.kind == Instruction::Kind::operation) in.guard = guard_;
    body_.push_back(std::move(in));
}

void Kernel::check_own(Reg r, std::string_view what) const {
    if (r.kernel() != serial_ || r.id() >= reg_types_.size())
        throw BuildError("ptx kernel '" + name_ + "': " + std::string(what) +
                         " is a register of another kernel or a default-constructed Reg");
}

Reg Kernel::reg(Type type) {
    if (bits_of(type) == 8)
        throw BuildError("ptx kernel '" + name_ + "': no 8-bit registers in PTX; load ." + std::string(name_of(type)) +
                         " values into a .u16 or .u32 register");
    auto const id = static_cast<std::uint32_t>(reg_types_.size());
    reg_types_.push_back(type);
    reg_ordinals_.push_back(next_ordinal_[static_cast<std::size_t>(type)]++);
    return Reg(type, id, serial_);
}

Reg Kernel::param(Type type, std::string_view name) {
    if (!is_identifier(name))
        throw BuildError("ptx kernel '" + name_ + "': parameter name '" + std::string(name) +
                         "' is not a PTX identifier");
    for (auto const& p : params_)
        if (p.name == name)
            throw BuildError("ptx kernel '" + name_ + "': parameter '" + std::string(name) + "' declared twice");
    if (type == Type::pred) throw BuildError("ptx kernel '" + name_ + "': a parameter cannot be a predicate");
    params_.push_back({type, std::string(name)});
    Type const held = bits_of(type) == 8 ? (kind_of(type) == TypeKind::signed_int ? Type::s32 : Type::u32) : type;
    Reg r = reg(held);
    push({.opcode = "ld.param" + type_suffix(type),
          .operands = {write(r, type, Fit::widening), text("[" + std::string(name) + "]")}});
    return r;
}

std::vector<Kernel::Parameter> Kernel::parameters() const {
    std::vector<Parameter> list;
    for (auto const& p : params_)
        list.push_back({p.type, p.name, p.bytes != 0 ? p.bytes : static_cast<std::size_t>(bytes_of(p.type))});
    return list;
}

Reg Kernel::tensor_map_param(std::string_view name) {
    if (!is_identifier(name))
        throw BuildError("ptx kernel '" + name_ + "': parameter name '" + std::string(name) +
                         "' is not a PTX identifier");
    for (auto const& p : params_)
        if (p.name == name)
            throw BuildError("ptx kernel '" + name_ + "': parameter '" + std::string(name) + "' declared twice");
    params_.push_back({Type::b8, std::string(name), 128});
    Reg const param_window = reg(Type::u64), generic = reg(Type::u64);
    push({.opcode = "mov.u64", .operands = {write(param_window, Type::u64), text(std::string(name))}});
    push({.opcode = "cvta.param.u64",
          .operands = {write(generic, Type::u64), read(param_window, Type::u64)},
          .requires_target = {.compute_capability = 70}});
    return generic;
}

Reg Kernel::special(Special s) {
    Reg r = reg(Type::u32);
    push({.opcode = "mov.u32", .operands = {write(r, Type::u32), text(std::string(special_name(s)))}});
    return r;
}

Symbol Kernel::shared_array(std::string_view name, Type element, std::size_t count, std::size_t alignment) {
    if (!is_identifier(name))
        throw BuildError("ptx kernel '" + name_ + "': shared array name '" + std::string(name) +
                         "' is not a PTX identifier");
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        throw BuildError("ptx kernel '" + name_ + "': shared array '" + std::string(name) + "' alignment " +
                         std::to_string(alignment) + " is not a power of two");
    if (element == Type::pred || count == 0)
        throw BuildError("ptx kernel '" + name_ + "': shared array '" + std::string(name) +
                         "' needs a data type and a count > 0");
    for (auto const& s : shared_)
        if (s.name == name)
            throw BuildError("ptx kernel '" + name_ + "': shared array '" + std::string(name) + "' declared twice");
    shared_.push_back({std::string(name), element, count, alignment});
    return Symbol{std::string(name)};
}

Symbol Kernel::dynamic_shared(std::size_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        throw BuildError("ptx kernel '" + name_ + "': dynamic shared alignment " + std::to_string(alignment) +
                         " is not a power of two");
    dynamic_shared_alignment_ = std::max(alignment, dynamic_shared_alignment_.value_or(1));
    return Symbol{name_ + "_dynamic_shared"};
}

Reg Kernel::shared_address(Symbol const& symbol) {
    Reg r = reg(Type::u32);
    push({.opcode = "mov.u32", .operands = {write(r, Type::u32), text(symbol.name)}});
    return r;
}

void Kernel::instruction(std::string opcode, std::vector<OperandUse> operands, Requirement requirement) {
    push({.opcode = std::move(opcode), .operands = std::move(operands), .requires_target = requirement});
}

void Kernel::comment(std::string text_) {
    body_.push_back({.kind = Instruction::Kind::comment, .opcode = std::move(text_)});
}

// ---- moves and conversions

void Kernel::mov(Reg dst, Operand src) {
    push({.opcode = "mov" + type_suffix(dst.type()), .operands = {write(dst, dst.type()), read(src, dst.type())}});
}
Reg Kernel::mov(Type type, Operand src) {
    Reg r = reg(type);
    mov(r, src);
    return r;
}

void Kernel::cvt(Reg dst, Reg src, Rounding rounding, bool saturate) {
    Rounding const r = conversion_rounding(dst.type(), src.type(), rounding);
    Requirement req;
    // f32 -> bf16 arrived with sm_80; conversions from bf16 with sm_90 (PTX ISA, cvt).
    if (dst.type() == Type::bf16) req.compute_capability = 80;
    if (src.type() == Type::bf16) req.compute_capability = 90;
    push({.opcode = "cvt" + std::string(rounding_name(r)) + (saturate ? ".sat" : "") + type_suffix(dst.type()) +
                    type_suffix(src.type()),
          .operands = {write(dst, dst.type()), read(src, src.type())},
          .requires_target = req});
}
Reg Kernel::cvt(Type to, Reg src, Rounding rounding, bool saturate) {
    Reg r = reg(to);
    cvt(r, src, rounding, saturate);
    return r;
}

Reg Kernel::bitcast(Type to, Reg src) {
    if (bits_of(to) != bits_of(src.type()) || to == Type::pred)
        throw BuildError("ptx kernel '" + name_ + "': bitcast from ." + std::string(name_of(src.type())) + " to ." +
                         std::string(name_of(to)) + " needs two data types of one width");
    Reg r = reg(to);
    Type const bits = bits_type(to);
    push({.opcode = "mov" + type_suffix(bits), .operands = {write(r, bits), read(src, bits)}});
    return r;
}

namespace {
void check_halves(std::string const& kernel, Type wide, Type half) {
    if ((bits_of(wide) != 32 && bits_of(wide) != 64) || bits_of(half) * 2 != bits_of(wide))
        throw BuildError("ptx kernel '" + kernel + "': ." + std::string(name_of(wide)) + " does not split into two ." +
                         std::string(name_of(half)) + " halves");
}
}  // namespace

std::array<Reg, 2> Kernel::split(Reg wide, Type half) {
    check_halves(name_, wide.type(), half);
    std::array<Reg, 2> const halves{reg(half), reg(half)};
    Type const part = bits_type(half);
    push({.opcode = "mov" + type_suffix(bits_type(wide.type())),
          .operands = {VectorUse{{RegUse{halves[0], part, Access::write}, RegUse{halves[1], part, Access::write}}},
                       read(wide, bits_type(wide.type()))}});
    return halves;
}

Reg Kernel::join(Type wide, Reg lo, Reg hi) {
    check_halves(name_, wide, lo.type());
    Reg r = reg(wide);
    Type const part = bits_type(lo.type());
    push({.opcode = "mov" + type_suffix(bits_type(wide)),
          .operands = {write(r, bits_type(wide)), VectorUse{{RegUse{lo, part}, RegUse{hi, part}}}}});
    return r;
}

Reg Kernel::cvta_to_global(Reg generic) {
    Reg r = reg(Type::u64);
    push({.opcode = "cvta.to.global.u64", .operands = {write(r, Type::u64), read(generic, Type::u64)}});
    return r;
}

Reg Kernel::element_address(Reg base, Reg index, unsigned element_bytes) {
    Reg offset = reg(Type::u64);
    Type const it = index.type() == Type::s32 ? Type::s32 : Type::u32;
    if (bits_of(index.type()) == 64) {
        push({.opcode = "mul.lo.u64",
              .operands = {write(offset, Type::u64), read(index, Type::u64), read(element_bytes, Type::u64)}});
    } else {
        push({.opcode = "mul.wide" + type_suffix(it),
              .operands = {write(offset, it == Type::s32 ? Type::s64 : Type::u64), read(index, it),
                           read(element_bytes, it)}});
    }
    return add(base, offset);
}

Reg Kernel::global_thread_index() {
    Reg block = special(Special::ctaid_x), width = special(Special::ntid_x), thread = special(Special::tid_x);
    return fma(block, width, thread);
}

// ---- arithmetic

void Kernel::arith(std::string_view op, Reg dst, std::vector<Operand> const& sources, bool float_rounding,
                   bool integer_lo) {
    Type const t = dst.type();
    std::string opcode(op);
    Requirement req;
    if (is_float(t)) {
        if (float_rounding) opcode += ".rn";
        if (t == Type::bf16 || t == Type::bf16x2) req.compute_capability = 90;
    } else if (integer_lo) {
        opcode += ".lo";
    }
    Type const spelled = is_float(t) ? t : arithmetic_type(t);
    opcode += type_suffix(spelled);
    Instruction in{.opcode = std::move(opcode), .operands = {write(dst, spelled)}, .requires_target = req};
    for (auto const& s : sources) in.operands.push_back(read(s, spelled));
    push(std::move(in));
}

void Kernel::add(Reg dst, Reg a, Operand b) { arith("add", dst, {a, b}, true, false); }
Reg Kernel::add(Reg a, Operand b) {
    Reg r = same_type_result(a);
    add(r, a, b);
    return r;
}
void Kernel::sub(Reg dst, Reg a, Operand b) { arith("sub", dst, {a, b}, true, false); }
Reg Kernel::sub(Reg a, Operand b) {
    Reg r = same_type_result(a);
    sub(r, a, b);
    return r;
}
void Kernel::mul(Reg dst, Reg a, Operand b) { arith("mul", dst, {a, b}, true, true); }
Reg Kernel::mul(Reg a, Operand b) {
    Reg r = same_type_result(a);
    mul(r, a, b);
    return r;
}

Reg Kernel::mul_wide(Reg a, Operand b) {
    require_integer("mul.wide", a);
    Type const t = arithmetic_type(a.type());
    Reg r = reg(wide_type(t));
    push({.opcode = "mul.wide" + type_suffix(t), .operands = {write(r, r.type()), read(a, t), read(b, t)}});
    return r;
}
Reg Kernel::mul_hi(Reg a, Operand b) {
    require_integer("mul.hi", a);
    Reg r = same_type_result(a);
    Type const t = arithmetic_type(a.type());
    push({.opcode = "mul.hi" + type_suffix(t), .operands = {write(r, t), read(a, t), read(b, t)}});
    return r;
}

void Kernel::div(Reg dst, Reg a, Operand b) { arith("div", dst, {a, b}, true, false); }
Reg Kernel::div(Reg a, Operand b) {
    Reg r = same_type_result(a);
    div(r, a, b);
    return r;
}
Reg Kernel::div_approx(Reg a, Operand b) {
    if (a.type() != Type::f32) throw BuildError("div.approx is .f32 only, got ." + std::string(name_of(a.type())));
    Reg r = same_type_result(a);
    push({.opcode = "div.approx.f32", .operands = {write(r, Type::f32), read(a, Type::f32), read(b, Type::f32)}});
    return r;
}
Reg Kernel::rem(Reg a, Operand b) {
    require_integer("rem", a);
    Reg r = same_type_result(a);
    arith("rem", r, {a, b}, false, false);
    return r;
}

void Kernel::fma(Reg dst, Reg a, Operand b, Operand c) {
    if (is_float(dst.type()))
        arith("fma", dst, {a, b, c}, true, false);
    else
        arith("mad", dst, {a, b, c}, false, true);
}
Reg Kernel::fma(Reg a, Operand b, Operand c) {
    Reg r = same_type_result(a);
    fma(r, a, b, c);
    return r;
}

void Kernel::min(Reg dst, Reg a, Operand b) { arith("min", dst, {a, b}, false, false); }
void Kernel::max(Reg dst, Reg a, Operand b) { arith("max", dst, {a, b}, false, false); }
Reg Kernel::min(Reg a, Operand b) {
    Reg r = same_type_result(a);
    min(r, a, b);
    return r;
}
Reg Kernel::max(Reg a, Operand b) {
    Reg r = same_type_result(a);
    max(r, a, b);
    return r;
}

Reg Kernel::neg(Reg a) {
    Reg r = same_type_result(a);
    Type const t = is_float(a.type()) ? a.type() : signed_type(a.type());
    push({.opcode = "neg" + type_suffix(t), .operands = {write(r, t), read(a, t)}});
    return r;
}
Reg Kernel::abs(Reg a) {
    Reg r = same_type_result(a);
    Type const t = is_float(a.type()) ? a.type() : signed_type(a.type());
    push({.opcode = "abs" + type_suffix(t), .operands = {write(r, t), read(a, t)}});
    return r;
}

void Kernel::unary_float(std::string_view opcode, Reg dst, Reg a, Requirement req) {
    require_float(opcode, a);
    push({.opcode = std::string(opcode) + type_suffix(a.type()),
          .operands = {write(dst, a.type()), read(a, a.type())},
          .requires_target = req});
}
Reg Kernel::sqrt(Reg a) {
    Reg r = same_type_result(a);
    unary_float("sqrt.rn", r, a);
    return r;
}
Reg Kernel::rcp(Reg a) {
    Reg r = same_type_result(a);
    unary_float("rcp.rn", r, a);
    return r;
}
Reg Kernel::rsqrt_approx(Reg a) {
    Reg r = same_type_result(a);
    unary_float("rsqrt.approx", r, a);
    return r;
}
Reg Kernel::rcp_approx(Reg a) {
    Reg r = same_type_result(a);
    unary_float("rcp.approx", r, a);
    return r;
}
Reg Kernel::ex2_approx(Reg a) {
    Reg r = same_type_result(a);
    unary_float("ex2.approx", r, a);
    return r;
}
Reg Kernel::lg2_approx(Reg a) {
    Reg r = same_type_result(a);
    unary_float("lg2.approx", r, a);
    return r;
}
Reg Kernel::tanh_approx(Reg a) {
    Reg r = same_type_result(a);
    unary_float("tanh.approx", r, a, {.compute_capability = 75});
    return r;
}

Reg Kernel::and_(Reg a, Operand b) {
    Reg r = same_type_result(a);
    Type const t = bits_type(a.type());
    push({.opcode = "and" + type_suffix(t), .operands = {write(r, t), read(a, t), read(b, t)}});
    return r;
}
Reg Kernel::or_(Reg a, Operand b) {
    Reg r = same_type_result(a);
    Type const t = bits_type(a.type());
    push({.opcode = "or" + type_suffix(t), .operands = {write(r, t), read(a, t), read(b, t)}});
    return r;
}
Reg Kernel::xor_(Reg a, Operand b) {
    Reg r = same_type_result(a);
    Type const t = bits_type(a.type());
    push({.opcode = "xor" + type_suffix(t), .operands = {write(r, t), read(a, t), read(b, t)}});
    return r;
}
Reg Kernel::not_(Reg a) {
    Reg r = same_type_result(a);
    Type const t = bits_type(a.type());
    push({.opcode = "not" + type_suffix(t), .operands = {write(r, t), read(a, t)}});
    return r;
}
Reg Kernel::shl(Reg a, Operand bits) {
    require_integer("shl", a);
    Reg r = same_type_result(a);
    Type const t = bits_type(a.type());
    push({.opcode = "shl" + type_suffix(t), .operands = {write(r, t), read(a, t), read(bits, Type::u32)}});
    return r;
}
Reg Kernel::shr(Reg a, Operand bits) {
    require_integer("shr", a);
    Reg r = same_type_result(a);
    Type const t = arithmetic_type(a.type());
    push({.opcode = "shr" + type_suffix(t), .operands = {write(r, t), read(a, t), read(bits, Type::u32)}});
    return r;
}
Reg Kernel::bfe(Reg a, Operand start, Operand length) {
    require_integer("bfe", a);
    Reg r = same_type_result(a);
    Type const t = arithmetic_type(a.type());
    push({.opcode = "bfe" + type_suffix(t),
          .operands = {write(r, t), read(a, t), read(start, Type::u32), read(length, Type::u32)}});
    return r;
}
Reg Kernel::prmt(Reg a, Operand b, Operand selector) {
    Reg r = reg(Type::b32);
    push({.opcode = "prmt.b32",
          .operands = {write(r, Type::b32), read(a, Type::b32), read(b, Type::b32), read(selector, Type::b32)}});
    return r;
}
Reg Kernel::dp4a(Reg a, Reg b, Operand c, bool a_signed, bool b_signed) {
    Type const at = a_signed ? Type::s32 : Type::u32, bt = b_signed ? Type::s32 : Type::u32;
    Type const ct = (a_signed || b_signed) ? Type::s32 : Type::u32;
    Reg r = reg(ct);
    push({.opcode = "dp4a" + type_suffix(at) + type_suffix(bt),
          .operands = {write(r, ct), read(a, at), read(b, bt), read(c, ct)},
          .requires_target = {.compute_capability = 61}});
    return r;
}

Reg Kernel::dp2a(Reg a, Reg b, Operand c, bool high, bool a_signed, bool b_signed) {
    Type const at = a_signed ? Type::s32 : Type::u32, bt = b_signed ? Type::s32 : Type::u32;
    Type const ct = (a_signed || b_signed) ? Type::s32 : Type::u32;
    Reg r = reg(ct);
    push({.opcode = std::string(high ? "dp2a.hi" : "dp2a.lo") + type_suffix(at) + type_suffix(bt),
          .operands = {write(r, ct), read(a, at), read(b, bt), read(c, ct)},
          .requires_target = {.compute_capability = 61}});
    return r;
}

// ---- comparisons

Reg Kernel::setp(Cmp cmp, Reg a, Operand b) {
    Reg p = reg(Type::pred);
    Type const t = is_float(a.type()) ? a.type() : arithmetic_type(a.type());
    push({.opcode = "setp." + std::string(cmp_name(cmp)) + type_suffix(t),
          .operands = {write(p, Type::pred), read(a, t), read(b, t)}});
    return p;
}
void Kernel::selp(Reg dst, Operand if_true, Operand if_false, Reg predicate) {
    Type const t = is_float(dst.type()) ? dst.type() : arithmetic_type(dst.type());
    push({.opcode = "selp" + type_suffix(t),
          .operands = {write(dst, t), read(if_true, t), read(if_false, t), read(predicate, Type::pred)}});
}
Reg Kernel::selp(Operand if_true, Operand if_false, Reg predicate, Type type) {
    Reg r = reg(type);
    selp(r, if_true, if_false, predicate);
    return r;
}
Reg Kernel::and_pred(Reg a, Reg b) {
    Reg p = reg(Type::pred);
    push({.opcode = "and.pred", .operands = {write(p, Type::pred), read(a, Type::pred), read(b, Type::pred)}});
    return p;
}
Reg Kernel::not_pred(Reg a) {
    Reg p = reg(Type::pred);
    push({.opcode = "not.pred", .operands = {write(p, Type::pred), read(a, Type::pred)}});
    return p;
}

// ---- memory

void Kernel::ld(Reg dst, Space space, Type type, Address const& address, Cache cache) {
    push({.opcode = "ld" + std::string(space_name(space)) + std::string(cache_name(cache)) + type_suffix(type),
          .operands = {write(dst, type, Fit::widening), AddressUse{address}}});
}
Reg Kernel::ld(Space space, Type type, Address const& address, Cache cache) {
    Type held = type;
    if (bits_of(type) == 8) held = kind_of(type) == TypeKind::signed_int ? Type::s32 : Type::u32;
    Reg r = reg(held);
    ld(r, space, type, address, cache);
    return r;
}
void Kernel::ld_vector(std::span<Reg const> dst, Space space, Type type, Address const& address, Cache cache) {
    if (dst.size() != 2 && dst.size() != 4)
        throw BuildError("ptx kernel '" + name_ + "': ld.v" + std::to_string(dst.size()) +
                         " does not exist (v2 or v4)");
    VectorUse v;
    for (Reg r : dst) v.elements.push_back({r, type, Access::write, Fit::widening});
    push({.opcode = "ld" + std::string(space_name(space)) + std::string(cache_name(cache)) + ".v" +
                    std::to_string(dst.size()) + type_suffix(type),
          .operands = {std::move(v), AddressUse{address}}});
}
std::vector<Reg> Kernel::ld_vector(Space space, Type type, int width, Address const& address, Cache cache) {
    std::vector<Reg> regs;
    for (int i = 0; i < width; ++i) regs.push_back(reg(type));
    ld_vector(regs, space, type, address, cache);
    return regs;
}
void Kernel::st(Space space, Type type, Address const& address, Operand value, Cache cache) {
    push({.opcode = "st" + std::string(space_name(space)) + std::string(cache_name(cache)) + type_suffix(type),
          .operands = {AddressUse{address}, read(value, type, Fit::widening)}});
}
void Kernel::st_vector(Space space, Type type, Address const& address, std::span<Reg const> values) {
    if (values.size() != 2 && values.size() != 4)
        throw BuildError("ptx kernel '" + name_ + "': st.v" + std::to_string(values.size()) +
                         " does not exist (v2 or v4)");
    VectorUse v;
    for (Reg r : values) v.elements.push_back({r, type, Access::read, Fit::widening});
    push({.opcode = "st" + std::string(space_name(space)) + ".v" + std::to_string(values.size()) + type_suffix(type),
          .operands = {AddressUse{address}, std::move(v)}});
}

namespace {
Type atomic_type(AtomicOp op, Type t) {
    if (op == AtomicOp::and_ || op == AtomicOp::or_ || op == AtomicOp::xor_ || op == AtomicOp::exch)
        return bits_type(t);
    return t;
}
}  // namespace

Reg Kernel::atom(Space space, AtomicOp op, Type type, Address const& address, Operand value) {
    Type const t = atomic_type(op, type);
    Reg r = reg(type);
    push({.opcode = "atom" + std::string(space_name(space)) + "." + std::string(atomic_name(op)) + type_suffix(t),
          .operands = {write(r, t), AddressUse{address}, read(value, t)}});
    return r;
}
void Kernel::red(Space space, AtomicOp op, Type type, Address const& address, Operand value) {
    Type const t = atomic_type(op, type);
    push({.opcode = "red" + std::string(space_name(space)) + "." + std::string(atomic_name(op)) + type_suffix(t),
          .operands = {AddressUse{address}, read(value, t)}});
}
Reg Kernel::atom_cas(Space space, Type type, Address const& address, Operand compare, Operand value) {
    Type const t = bits_type(type);
    Reg r = reg(type);
    push({.opcode = "atom" + std::string(space_name(space)) + ".cas" + type_suffix(t),
          .operands = {write(r, t), AddressUse{address}, read(compare, t), read(value, t)}});
    return r;
}

// ---- asynchronous copies and tensor cores

void Kernel::cp_async(Reg shared_address, Address const& global, int bytes, std::optional<Operand> source_bytes) {
    if (bytes != 4 && bytes != 8 && bytes != 16)
        throw BuildError("ptx kernel '" + name_ + "': cp.async copies 4, 8 or 16 bytes, not " + std::to_string(bytes));
    Instruction in{.opcode = std::string("cp.async") + (bytes == 16 ? ".cg" : ".ca") + ".shared.global",
                   .operands = {AddressUse{Address(shared_address)}, AddressUse{global}, ImmUse{bytes, Type::u32}},
                   .requires_target = {.compute_capability = 80}};
    if (source_bytes) in.operands.push_back(read(*source_bytes, Type::u32));
    push(std::move(in));
}
void Kernel::cp_async_commit() {
    push({.opcode = "cp.async.commit_group", .requires_target = {.compute_capability = 80}});
}
void Kernel::cp_async_wait(int pending_groups) {
    push({.opcode = "cp.async.wait_group",
          .operands = {ImmUse{pending_groups, Type::u32}},
          .requires_target = {.compute_capability = 80}});
}

void Kernel::cp_async_bulk_prefetch_l2(Address const& global, Operand bytes) {
    push({.opcode = "cp.async.bulk.prefetch.L2.global",
          .operands = {AddressUse{global}, read(bytes, Type::u32)},
          .requires_target = {.compute_capability = 90}});
}

void Kernel::mbarrier_init(Reg shared_address, Operand arrivals) {
    push({.opcode = "mbarrier.init.shared::cta.b64",
          .operands = {AddressUse{Address(shared_address)}, read(arrivals, Type::u32)},
          .requires_target = {.compute_capability = 90}});
}
void Kernel::fence_mbarrier_init() {
    push({.opcode = "fence.mbarrier_init.release.cluster", .requires_target = {.compute_capability = 90}});
}
void Kernel::mbarrier_arrive(Reg shared_address) {
    Reg const state = reg(Type::b64);  // the phase arrived at, which no caller needs
    push({.opcode = "mbarrier.arrive.shared::cta.b64",
          .operands = {write(state, Type::b64), AddressUse{Address(shared_address)}},
          .requires_target = {.compute_capability = 90}});
}
void Kernel::mbarrier_arrive_expect_tx(Reg shared_address, Operand bytes) {
    Reg const state = reg(Type::b64);
    push({.opcode = "mbarrier.arrive.expect_tx.shared::cta.b64",
          .operands = {write(state, Type::b64), AddressUse{Address(shared_address)}, read(bytes, Type::u32)},
          .requires_target = {.compute_capability = 90}});
}
void Kernel::mbarrier_wait(Reg shared_address, Operand parity) {
    Label const retry = label();
    place(retry);
    Reg const done = reg(Type::pred);
    push({.opcode = "mbarrier.try_wait.parity.shared::cta.b64",
          .operands = {write(done, Type::pred), AddressUse{Address(shared_address)}, read(parity, Type::u32)},
          .requires_target = {.compute_capability = 90}});
    bra_if(done, retry, false);
}
void Kernel::cp_async_bulk_to_shared(Reg shared_address, Address const& global, Operand bytes, Reg mbarrier) {
    push({.opcode = "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
          .operands = {AddressUse{Address(shared_address)}, AddressUse{global}, read(bytes, Type::u32),
                       AddressUse{Address(mbarrier)}},
          .requires_target = {.compute_capability = 90}});
}

void Kernel::prefetch_tensor_map(Reg map) {
    push({.opcode = "prefetch.tensormap",
          .operands = {AddressUse{Address(map)}},
          .requires_target = {.compute_capability = 90}});
}

namespace {

TensorAddressUse tensor_address(Reg map, std::span<Reg const> coordinates) {
    TensorAddressUse use{.map = {map, Type::u64}, .coordinates = {}};
    for (Reg c : coordinates) use.coordinates.push_back({c, Type::s32});
    return use;
}

}  // namespace

void Kernel::tma_load(Reg shared_address, Reg map, std::span<Reg const> coordinates, Reg mbarrier,
                      std::optional<Reg> multicast_mask) {
    if (coordinates.empty() || coordinates.size() > 5)
        throw BuildError("ptx kernel '" + name_ + "': a tensor copy takes 1 to 5 coordinates, not " +
                         std::to_string(coordinates.size()));
    Instruction in{.opcode = "cp.async.bulk.tensor." + std::to_string(coordinates.size()) +
                             "d.shared::cluster.global.tile.mbarrier::complete_tx::bytes" +
                             (multicast_mask ? ".multicast::cluster" : ""),
                   .operands = {AddressUse{Address(shared_address)}, tensor_address(map, coordinates),
                                AddressUse{Address(mbarrier)}},
                   // ptxas takes the multicast form for sm_90a (and warns for sm_90).
                   .requires_target = {.compute_capability = 90, .architecture_specific = multicast_mask.has_value()}};
    if (multicast_mask) in.operands.push_back(read(*multicast_mask, Type::u16));
    push(std::move(in));
}

void Kernel::tma_store(Reg map, std::span<Reg const> coordinates, Reg shared_address) {
    if (coordinates.empty() || coordinates.size() > 5)
        throw BuildError("ptx kernel '" + name_ + "': a tensor copy takes 1 to 5 coordinates, not " +
                         std::to_string(coordinates.size()));
    push({.opcode =
              "cp.async.bulk.tensor." + std::to_string(coordinates.size()) + "d.global.shared::cta.tile.bulk_group",
          .operands = {tensor_address(map, coordinates), AddressUse{Address(shared_address)}},
          .requires_target = {.compute_capability = 90}});
}
void Kernel::cp_async_bulk_commit() {
    push({.opcode = "cp.async.bulk.commit_group", .requires_target = {.compute_capability = 90}});
}
void Kernel::cp_async_bulk_wait_read(int pending_groups) {
    push({.opcode = "cp.async.bulk.wait_group.read",
          .operands = {ImmUse{pending_groups, Type::u32}},
          .requires_target = {.compute_capability = 90}});
}
void Kernel::fence_proxy_async_shared() {
    push({.opcode = "fence.proxy.async.shared::cta", .requires_target = {.compute_capability = 90}});
}
void Kernel::wgmma_fence() {
    push({.opcode = "wgmma.fence.sync.aligned",
          .requires_target = {.compute_capability = 90, .architecture_specific = true}});
}
void Kernel::wgmma_commit() {
    push({.opcode = "wgmma.commit_group.sync.aligned",
          .requires_target = {.compute_capability = 90, .architecture_specific = true}});
}
void Kernel::wgmma_wait(int pending_groups) {
    if (pending_groups < 0 || pending_groups > 7)
        throw BuildError("ptx kernel '" + name_ + "': wgmma.wait_group takes 0 to 7 pending groups, not " +
                         std::to_string(pending_groups));
    push({.opcode = "wgmma.wait_group.sync.aligned",
          .operands = {ImmUse{pending_groups, Type::u32}},
          .requires_target = {.compute_capability = 90, .architecture_specific = true}});
}

namespace {

// wgmma's k and the name of its input type: f32 values are read as .tf32, 8 of them along k.
unsigned wgmma_k(Type input) { return input == Type::f32 ? 8 : 16; }
std::string wgmma_input(Type input) { return input == Type::f32 ? "tf32" : std::string(name_of(input)); }

std::string wgmma_opcode(Type input, unsigned n) {
    std::string const in = wgmma_input(input);
    return "wgmma.mma_async.sync.aligned.m64n" + std::to_string(n) + "k" + std::to_string(wgmma_k(input)) + ".f32." +
           in + "." + in;
}

}  // namespace

void Kernel::check_wgmma(Type input, unsigned n, std::size_t accumulators) const {
    if (input != Type::f16 && input != Type::bf16 && input != Type::f32)
        throw BuildError("ptx kernel '" + name_ +
                         "': wgmma with f32 accumulators takes .f16, .bf16 or .f32 (as .tf32) inputs, not ." +
                         std::string(name_of(input)));
    if (n < 8 || n > 256 || n % 8 != 0)
        throw BuildError("ptx kernel '" + name_ + "': wgmma's n is a multiple of 8 from 8 to 256, not " +
                         std::to_string(n));
    if (accumulators != n / 2)
        throw BuildError("ptx kernel '" + name_ + "': wgmma m64n" + std::to_string(n) + "k" +
                         std::to_string(wgmma_k(input)) + " needs " + std::to_string(n / 2) +
                         " accumulator registers, got " + std::to_string(accumulators));
}

namespace {

VectorUse accumulator_use(std::span<Reg const> d) {
    VectorUse accumulators;
    for (Reg r : d) accumulators.elements.push_back({r, Type::f32, Access::read_write});
    return accumulators;
}

}  // namespace

void Kernel::wgmma(Type input, unsigned n, std::span<Reg const> d, Reg a_descriptor, Reg b_descriptor, Reg accumulate,
                   bool transpose_a, bool transpose_b) {
    check_wgmma(input, n, d.size());
    std::vector<OperandUse> operands{
        accumulator_use(d),           read(a_descriptor, Type::b64), read(b_descriptor, Type::b64),
        read(accumulate, Type::pred), ImmUse{1, Type::s32},          ImmUse{1, Type::s32}};
    if (input == Type::f32) {
        if (transpose_a || transpose_b)
            throw BuildError("ptx kernel '" + name_ +
                             "': wgmma with .tf32 inputs reads both operands K-major (no transposes)");
    } else {
        operands.push_back(ImmUse{transpose_a ? 1 : 0, Type::s32});
        operands.push_back(ImmUse{transpose_b ? 1 : 0, Type::s32});
    }
    push({.opcode = wgmma_opcode(input, n),
          .operands = std::move(operands),
          .requires_target = {.compute_capability = 90, .architecture_specific = true}});
}

void Kernel::wgmma(Type input, unsigned n, std::span<Reg const> d, std::span<Reg const> a, Reg b_descriptor,
                   Reg accumulate, bool transpose_b) {
    check_wgmma(input, n, d.size());
    if (input == Type::f32)
        throw BuildError("ptx kernel '" + name_ + "': rayo issues wgmma with .tf32 inputs from shared memory only");
    if (a.size() != 4)
        throw BuildError("ptx kernel '" + name_ + "': wgmma with a from registers takes 4 .b32 registers, got " +
                         std::to_string(a.size()));
    VectorUse fragment;
    for (Reg r : a) fragment.elements.push_back({r, Type::b32, Access::read});
    push({.opcode = wgmma_opcode(input, n),
          .operands = {accumulator_use(d), std::move(fragment), read(b_descriptor, Type::b64),
                       read(accumulate, Type::pred), ImmUse{1, Type::s32}, ImmUse{1, Type::s32},
                       ImmUse{transpose_b ? 1 : 0, Type::s32}},
          .requires_target = {.compute_capability = 90, .architecture_specific = true}});
}

void Kernel::setmaxnreg(RegisterChange change, unsigned registers) {
    if (registers < 24 || registers > 256 || registers % 8 != 0)
        throw BuildError("ptx kernel '" + name_ + "': setmaxnreg takes 24 to 256 registers in steps of 8, not " +
                         std::to_string(registers));
    push({.opcode =
              std::string("setmaxnreg.") + (change == RegisterChange::increase ? "inc" : "dec") + ".sync.aligned.u32",
          .operands = {ImmUse{registers, Type::u32}},
          .requires_target = {.compute_capability = 90, .architecture_specific = true}});
}

void Kernel::cluster_dims(unsigned x, unsigned y, unsigned z) {
    if (x == 0 || y == 0 || z == 0 || x * y * z > 16)
        throw BuildError("ptx kernel '" + name_ + "': a cluster of " + std::to_string(x) + "x" + std::to_string(y) +
                         "x" + std::to_string(z) + " blocks (each dimension at least 1, at most 16 blocks)");
    cluster_ = {x, y, z};
}
void Kernel::barrier_cluster_arrive(bool aligned) {
    push({.opcode = std::string("barrier.cluster.arrive.release") + (aligned ? ".aligned" : ""),
          .requires_target = {.compute_capability = 90}});
}
void Kernel::barrier_cluster_wait(bool aligned) {
    push({.opcode = std::string("barrier.cluster.wait.acquire") + (aligned ? ".aligned" : ""),
          .requires_target = {.compute_capability = 90}});
}
Reg Kernel::mapa_shared(Reg shared_address, Operand cta_rank) {
    Reg r = reg(Type::u32);
    push({.opcode = "mapa.shared::cluster.u32",
          .operands = {write(r, Type::u32), read(shared_address, Type::u32), read(cta_rank, Type::u32)},
          .requires_target = {.compute_capability = 90}});
    return r;
}
void Kernel::mbarrier_arrive_cluster(Reg cluster_address) {
    push({.opcode = "mbarrier.arrive.release.cluster.shared::cluster.b64",
          .operands = {text("_"), AddressUse{Address(cluster_address)}},
          .requires_target = {.compute_capability = 90}});
}

std::vector<Reg> Kernel::ldmatrix(int count, bool transpose, Reg shared_address) {
    if (count != 1 && count != 2 && count != 4)
        throw BuildError("ptx kernel '" + name_ + "': ldmatrix loads 1, 2 or 4 matrices, not " + std::to_string(count));
    std::vector<Reg> regs;
    VectorUse v;
    for (int i = 0; i < count; ++i) {
        regs.push_back(reg(Type::b32));
        v.elements.push_back({regs.back(), Type::b32, Access::write});
    }
    push(
        {.opcode = "ldmatrix.sync.aligned.m8n8.x" + std::to_string(count) + (transpose ? ".trans" : "") + ".shared.b16",
         .operands = {std::move(v), AddressUse{Address(shared_address)}},
         .requires_target = {.compute_capability = 75}});
    return regs;
}

void Kernel::mma_m16n8k16(Type input, std::span<Reg const> d, std::span<Reg const> a, std::span<Reg const> b,
                          std::span<Reg const> c) {
    if (input != Type::f16 && input != Type::bf16)
        throw BuildError("ptx kernel '" + name_ + "': mma m16n8k16 takes .f16 or .bf16 inputs, not ." +
                         std::string(name_of(input)));
    if (d.size() != 4 || a.size() != 4 || b.size() != 2 || c.size() != 4)
        throw BuildError("ptx kernel '" + name_ + "': mma m16n8k16 needs 4 d, 4 a, 2 b and 4 c registers, got " +
                         std::to_string(d.size()) + ", " + std::to_string(a.size()) + ", " + std::to_string(b.size()) +
                         ", " + std::to_string(c.size()));
    auto vector = [](std::span<Reg const> regs, Type t, Access access) {
        VectorUse v;
        for (Reg r : regs) v.elements.push_back({r, t, access});
        return v;
    };
    std::string const in(name_of(input));
    push({.opcode = "mma.sync.aligned.m16n8k16.row.col.f32." + in + "." + in + ".f32",
          .operands = {vector(d, Type::f32, Access::write), vector(a, Type::b32, Access::read),
                       vector(b, Type::b32, Access::read), vector(c, Type::f32, Access::read)},
          .requires_target = {.compute_capability = 80}});
}

// ---- warp-level

Reg Kernel::shfl(ShuffleMode mode, Reg value, Operand lane_or_delta, std::uint32_t mask) {
    if (bits_of(value.type()) != 32)
        throw BuildError("ptx kernel '" + name_ + "': shfl.sync moves 32-bit values, got ." +
                         std::string(name_of(value.type())));
    constexpr std::string_view names[] = {"up", "down", "bfly", "idx"};
    Reg r = same_type_result(value);
    // c packs the segment mask (0: the whole warp) and the lane clamp: 0 for up, 31 otherwise.
    int const clamp = mode == ShuffleMode::up ? 0 : 31;
    push({.opcode = "shfl.sync." + std::string(names[static_cast<int>(mode)]) + ".b32",
          .operands = {write(r, Type::b32), read(value, Type::b32), read(lane_or_delta, Type::u32),
                       ImmUse{clamp, Type::u32}, ImmUse{static_cast<std::int64_t>(mask), Type::u32}}});
    return r;
}

Reg Kernel::vote(VoteMode mode, Reg predicate, std::uint32_t mask) {
    constexpr std::string_view names[] = {"all", "any", "uni", "ballot"};
    Type const t = mode == VoteMode::ballot ? Type::b32 : Type::pred;
    Reg r = reg(t);
    push({.opcode = "vote.sync." + std::string(names[static_cast<int>(mode)]) + type_suffix(t),
          .operands = {write(r, t), read(predicate, Type::pred), ImmUse{static_cast<std::int64_t>(mask), Type::u32}}});
    return r;
}

// ---- synchronisation

void Kernel::griddepcontrol_wait() {
    push({.opcode = "griddepcontrol.wait", .requires_target = {.compute_capability = 90}});
}
void Kernel::griddepcontrol_wait_at_entry() {
    if (waits_for_previous_grid()) return;
    body_.insert(body_.begin(),
                 Instruction{.opcode = "griddepcontrol.wait", .requires_target = {.compute_capability = 90}});
}
bool Kernel::waits_for_previous_grid() const noexcept {
    return std::any_of(body_.begin(), body_.end(),
                       [](Instruction const& in) { return in.opcode == "griddepcontrol.wait"; });
}
bool Kernel::architecture_specific() const noexcept {
    return std::any_of(body_.begin(), body_.end(),
                       [](Instruction const& in) { return in.requires_target.architecture_specific; });
}
void Kernel::griddepcontrol_launch_dependents() {
    push({.opcode = "griddepcontrol.launch_dependents", .requires_target = {.compute_capability = 90}});
}
void Kernel::bar_sync(int barrier) { push({.opcode = "bar.sync", .operands = {ImmUse{barrier, Type::u32}}}); }
void Kernel::check_named_barrier(int barrier, unsigned threads) const {
    if (barrier < 0 || barrier > 15)
        throw BuildError("ptx kernel '" + name_ + "': barriers are numbered 0 to 15, not " + std::to_string(barrier));
    if (threads == 0 || threads % 32 != 0 || threads > 1024)
        throw BuildError("ptx kernel '" + name_ +
                         "': a named barrier counts whole warps (a multiple of 32 up to 1024 threads), not " +
                         std::to_string(threads));
}
void Kernel::bar_sync(int barrier, unsigned threads) {
    check_named_barrier(barrier, threads);
    push({.opcode = "bar.sync", .operands = {ImmUse{barrier, Type::u32}, ImmUse{threads, Type::u32}}});
}
void Kernel::bar_arrive(int barrier, unsigned threads) {
    check_named_barrier(barrier, threads);
    push({.opcode = "bar.arrive", .operands = {ImmUse{barrier, Type::u32}, ImmUse{threads, Type::u32}}});
}
void Kernel::bar_warp_sync(std::uint32_t mask) {
    push({.opcode = "bar.warp.sync", .operands = {ImmUse{static_cast<std::int64_t>(mask), Type::u32}}});
}
void Kernel::membar_gl() { push({.opcode = "membar.gl"}); }

// ---- control flow

Label Kernel::label() { return Label(label_count_++, serial_); }

void Kernel::place(Label l) {
    if (l.kernel() != serial_) throw BuildError("ptx kernel '" + name_ + "': placing a label of another kernel");
    for (auto const& in : body_)
        if (in.kind == Instruction::Kind::label && in.placed.id() == l.id())
            throw BuildError("ptx kernel '" + name_ + "': label $L_" + std::to_string(l.id()) + " placed twice");
    body_.push_back({.kind = Instruction::Kind::label, .placed = l});
}
void Kernel::bra(Label l) { push({.opcode = "bra", .operands = {LabelUse{l}}}); }
void Kernel::bra_if(Reg predicate, Label l, bool when) {
    if (guard_)
        throw BuildError("ptx kernel '" + name_ + "': a conditional branch inside predicated() would need two guards");
    push({.opcode = "bra", .operands = {LabelUse{l}}, .guard = Guard{predicate, when}});
}
void Kernel::ret() { push({.opcode = "ret"}); }

void Kernel::predicated(Reg predicate, bool when, std::function<void()> const& body) {
    if (guard_)
        throw BuildError("ptx kernel '" + name_ + "': predicated() blocks do not nest (an instruction has one guard)");
    guard_ = Guard{predicate, when};
    try {
        body();
    } catch (...) {
        guard_.reset();
        throw;
    }
    guard_.reset();
}

void Kernel::if_then(Reg predicate, std::function<void()> const& body) {
    Label const skip = label();
    bra_if(predicate, skip, false);
    body();
    place(skip);
}

void Kernel::if_then_else(Reg predicate, std::function<void()> const& then_body,
                          std::function<void()> const& else_body) {
    Label const otherwise = label(), done = label();
    bra_if(predicate, otherwise, false);
    then_body();
    bra(done);
    place(otherwise);
    else_body();
    place(done);
}

void Kernel::for_range(Reg index, Operand begin, Operand end, Operand step, std::function<void()> const& body) {
    Label const top = label(), done = label();
    mov(index, begin);
    place(top);
    bra_if(setp(Cmp::ge, index, end), done);
    body();
    add(index, index, step);
    bra(top);
    place(done);
}

}  // namespace rayo::ptx
