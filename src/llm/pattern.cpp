// rayo::llm::Pattern (llm/pattern.hpp): parsed into a tree, compiled into a small program of
// instructions, run by a backtracking machine that tries the alternatives in order of preference.
#include "llm/pattern.hpp"

#include <limits>

#include "rayo/error.hpp"

namespace rayo::llm {

namespace {

constexpr std::size_t unbounded = std::numeric_limits<std::size_t>::max();

struct Node {
    enum class Kind {
        empty,
        literal,
        char_class,
        end_of_text,
        sequence,
        alternation,
        repeat,
        look_ahead,
        look_ahead_not
    };
    Kind kind = Kind::empty;
    char32_t code_point = 0;
    std::uint32_t class_index = 0;
    std::size_t min = 0, max = 0;  // repeat
    std::vector<Node> children;

    static Node of(Kind kind) {
        Node n;
        n.kind = kind;
        return n;
    }
    static Node literal_of(char32_t c) {
        Node n = of(Kind::literal);
        n.code_point = c;
        return n;
    }
    static Node class_of(std::size_t index) {
        Node n = of(Kind::char_class);
        n.class_index = static_cast<std::uint32_t>(index);
        return n;
    }
};

bool is_zero_width(Node::Kind k) {
    return k == Node::Kind::empty || k == Node::Kind::end_of_text || k == Node::Kind::look_ahead ||
           k == Node::Kind::look_ahead_not;
}

// Whether `node` can match without consuming a code point.
bool nullable(Node const& node) {
    switch (node.kind) {
        case Node::Kind::literal:
        case Node::Kind::char_class: return false;
        case Node::Kind::sequence:
            for (Node const& child : node.children)
                if (!nullable(child)) return false;
            return true;
        case Node::Kind::alternation:
            for (Node const& child : node.children)
                if (nullable(child)) return true;
            return false;
        case Node::Kind::repeat: return node.min == 0 || nullable(node.children.front());
        default: return is_zero_width(node.kind);
    }
}

// Recursive descent over the expression's code points.
class Parser {
public:
    Parser(std::string_view expression, std::vector<Pattern::CharClass>& classes)
        : expression_(expression), text_(unicode::decode(expression)), classes_(classes) {}

    Node parse() {
        Node root = alternation();
        if (pos_ < text_.size()) fail("an unmatched ')'");
        if (nullable(root)) fail("a pattern that matches empty text", 0);
        return root;
    }

private:
    [[noreturn]] void fail(std::string_view what, std::size_t at) const {
        throw Error("pre-tokenizer pattern '" + std::string(expression_) + "': " + std::string(what) +
                    " (at code point " + std::to_string(at) + ") is not supported");
    }
    [[noreturn]] void fail(std::string_view what) const { fail(what, pos_); }

    bool at_end() const { return pos_ >= text_.size(); }
    char32_t peek(std::size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : 0; }
    bool accept(char32_t c) {
        if (at_end() || text_[pos_] != c) return false;
        ++pos_;
        return true;
    }

    Node alternation() {
        Node first = sequence();
        if (peek() != U'|') return first;
        Node alt = Node::of(Node::Kind::alternation);
        alt.children.push_back(std::move(first));
        while (accept(U'|')) alt.children.push_back(sequence());
        return alt;
    }

    Node sequence() {
        Node seq = Node::of(Node::Kind::sequence);
        while (!at_end() && peek() != U'|' && peek() != U')') seq.children.push_back(quantified());
        if (seq.children.size() == 1) return std::move(seq.children.front());
        return seq;
    }

    Node quantified() {
        Node atom_node = atom();
        std::size_t min = 0, max = 0;
        if (accept(U'?')) {
            min = 0, max = 1;
        } else if (accept(U'*')) {
            min = 0, max = unbounded;
        } else if (accept(U'+')) {
            min = 1, max = unbounded;
        } else if (peek() == U'{') {
            ++pos_;
            min = max = number();
            if (accept(U',')) max = peek() == U'}' ? unbounded : number();
            if (!accept(U'}') || max < min) fail("a malformed {n,m}");
        } else {
            return atom_node;
        }
        if (peek() == U'?' || peek() == U'+') fail("a lazy or possessive quantifier");
        if (is_zero_width(atom_node.kind)) fail("a repeated zero-width assertion");
        if (max == unbounded && nullable(atom_node)) fail("a repeated part that can match empty text");
        Node rep = Node::of(Node::Kind::repeat);
        rep.min = min;
        rep.max = max;
        rep.children.push_back(std::move(atom_node));
        return rep;
    }

    std::size_t number() {
        std::size_t value = 0, digits = 0;
        for (; peek() >= U'0' && peek() <= U'9'; ++pos_, ++digits) value = value * 10 + (peek() - U'0');
        if (digits == 0 || value > 1000) fail("a malformed {n,m}");
        return value;
    }

    Node atom() {
        char32_t const c = peek();
        std::size_t const start = pos_++;
        switch (c) {
            case U'(': return group();
            case U'[': return char_class();
            case U'\\': return escape();
            case U'$': return Node::of(Node::Kind::end_of_text);
            case U'.':
            case U'^': fail(c == U'.' ? "'.'" : "'^'", start);
            case U'*':
            case U'+':
            case U'?':
            case U'{': fail("a quantifier with nothing to repeat", start);
            default: return Node::literal_of(c);
        }
    }

    Node group() {
        Node::Kind kind = Node::Kind::sequence;
        if (accept(U'?')) {
            if (accept(U':')) {
                kind = Node::Kind::sequence;
            } else if (accept(U'=')) {
                kind = Node::Kind::look_ahead;
            } else if (accept(U'!')) {
                kind = Node::Kind::look_ahead_not;
            } else {
                fail("a group of this kind ((?i:, lookbehind, named groups)");
            }
        }
        Node inner = alternation();
        if (!accept(U')')) fail("an unclosed group");
        if (kind == Node::Kind::sequence) return inner;
        Node look = Node::of(kind);
        look.children.push_back(std::move(inner));
        return look;
    }

    Node class_node(Pattern::CharClass cls) {
        classes_.push_back(std::move(cls));
        return Node::class_of(classes_.size() - 1);
    }

    // After '\': a class escape (\s \S \p \P) into `cls`, or the code point it stands for.
    std::optional<char32_t> escaped(Pattern::CharClass& cls) {
        if (at_end()) fail("a trailing '\\'");
        char32_t const c = text_[pos_++];
        switch (c) {
            case U's': cls.whitespace = true; return std::nullopt;
            case U'S': cls.not_whitespace = true; return std::nullopt;
            case U'p': cls.categories |= property(); return std::nullopt;
            case U'P':
                if (cls.not_categories != 0) fail("two \\P{..} in one class");
                cls.not_categories = property();
                return std::nullopt;
            case U'r': return U'\r';
            case U'n': return U'\n';
            case U't': return U'\t';
            case U'f': return U'\f';
            case U'v': return U'\v';
            default:
                if ((c >= U'0' && c <= U'9') || (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'))
                    fail("this escape", pos_ - 2);
                return c;
        }
    }

    unicode::CategorySet property() {
        std::size_t const start = pos_ - 2;
        if (!accept(U'{')) fail("\\p without {..}", start);
        std::string name;
        while (!at_end() && peek() != U'}') unicode::append(name, text_[pos_++]);
        if (!accept(U'}')) fail("an unclosed \\p{..}", start);
        auto const set = unicode::category_set(name);
        if (!set) fail("the property \\p{" + name + "}", start);
        return *set;
    }

    Node escape() {
        Pattern::CharClass cls;
        if (auto const c = escaped(cls)) return Node::literal_of(*c);
        return class_node(std::move(cls));
    }

    // One member of a class: a code point (nothing when it was a class escape, added to `cls`).
    std::optional<char32_t> class_member(Pattern::CharClass& cls) {
        if (at_end()) fail("an unclosed '['");
        char32_t const c = text_[pos_++];
        if (c == U'\\') return escaped(cls);
        if (c == U'[') fail("a nested class", pos_ - 1);
        if (c == U'&' && peek() == U'&') fail("a class intersection (&&)", pos_ - 1);
        return c;
    }

    Node char_class() {
        Pattern::CharClass cls;
        cls.negated = accept(U'^');
        bool first = true;
        while (first || peek() != U']') {
            if (at_end()) fail("an unclosed '['");
            first = false;
            auto const low = class_member(cls);
            if (!low) continue;
            if (peek() == U'-' && peek(1) != U']' && pos_ + 1 < text_.size()) {
                ++pos_;
                auto const high = class_member(cls);
                if (!high || *high < *low) fail("a malformed range", pos_ - 1);
                cls.ranges.emplace_back(*low, *high);
            } else {
                cls.ranges.emplace_back(*low, *low);
            }
        }
        ++pos_;  // ']'
        return class_node(std::move(cls));
    }

    std::string_view expression_;
    std::u32string text_;
    std::size_t pos_ = 0;
    std::vector<Pattern::CharClass>& classes_;
};

// Appends the instructions of a node.
class Compiler {
public:
    explicit Compiler(std::vector<Pattern::Instruction>& program) : program_(program) {}

    void emit(Node const& node) {
        using Op = Pattern::Op;
        switch (node.kind) {
            case Node::Kind::empty: break;
            case Node::Kind::literal: add(Op::literal, node.code_point); break;
            case Node::Kind::char_class: add(Op::char_class, node.class_index); break;
            case Node::Kind::end_of_text: add(Op::end_of_text); break;
            case Node::Kind::sequence:
                for (Node const& child : node.children) emit(child);
                break;
            case Node::Kind::alternation: emit_alternation(node.children); break;
            case Node::Kind::repeat: emit_repeat(node.children.front(), node.min, node.max); break;
            case Node::Kind::look_ahead:
            case Node::Kind::look_ahead_not: {
                std::size_t const look = add(node.kind == Node::Kind::look_ahead ? Op::look_ahead : Op::look_ahead_not);
                emit(node.children.front());
                add(Op::match);
                program_[look].b = here();
                break;
            }
        }
    }

private:
    std::size_t add(Pattern::Op op, std::uint32_t a = 0, std::uint32_t b = 0) {
        program_.push_back({op, a, b});
        return program_.size() - 1;
    }
    std::uint32_t here() const { return static_cast<std::uint32_t>(program_.size()); }

    // split(first, next) first: jump(end) next: split ... last end:
    void emit_alternation(std::vector<Node> const& choices) {
        std::vector<std::size_t> jumps_to_end;
        for (std::size_t i = 0; i + 1 < choices.size(); ++i) {
            std::size_t const split = add(Pattern::Op::split, here() + 1);
            emit(choices[i]);
            jumps_to_end.push_back(add(Pattern::Op::jump));
            program_[split].b = here();
        }
        emit(choices.back());
        for (std::size_t j : jumps_to_end) program_[j].a = here();
    }

    // min copies, then either a loop or (max - min) nested optional copies, all greedy.
    void emit_repeat(Node const& body, std::size_t min, std::size_t max) {
        for (std::size_t i = 0; i < min; ++i) emit(body);
        if (max == unbounded) {
            std::size_t const split = add(Pattern::Op::split, here() + 1);
            emit(body);
            add(Pattern::Op::jump, static_cast<std::uint32_t>(split));
            program_[split].b = here();
            return;
        }
        std::vector<std::size_t> splits;
        for (std::size_t i = min; i < max; ++i) {
            splits.push_back(add(Pattern::Op::split, here() + 1));
            emit(body);
        }
        for (std::size_t s : splits) program_[s].b = here();
    }

    std::vector<Pattern::Instruction>& program_;
};

}  // namespace

bool Pattern::CharClass::contains(char32_t c) const noexcept {
    bool in = false;
    for (auto const& [low, high] : ranges) {
        if (c >= low && c <= high) {
            in = true;
            break;
        }
    }
    if (!in && (categories | not_categories) != 0) {
        unicode::CategorySet const b = unicode::bit(unicode::category(c));
        in = (categories & b) != 0 || (not_categories != 0 && (not_categories & b) == 0);
    }
    if (!in && (whitespace || not_whitespace)) {
        bool const space = unicode::is_whitespace(c);
        in = (whitespace && space) || (not_whitespace && !space);
    }
    return in != negated;
}

Pattern::Pattern(std::string_view expression) : expression_(expression) {
    Node const root = Parser(expression, classes_).parse();
    Compiler(program_).emit(root);
    program_.push_back({Op::match});
}

std::size_t Pattern::match(std::u32string_view text, std::size_t at) const {
    thread_local std::vector<std::pair<std::uint32_t, std::size_t>> stack;
    return run(0, text, at, stack);
}

std::size_t Pattern::run(std::size_t start_pc, std::u32string_view text, std::size_t at,
                         std::vector<std::pair<std::uint32_t, std::size_t>>& stack) const {
    std::size_t const base = stack.size();
    stack.emplace_back(static_cast<std::uint32_t>(start_pc), at);
    while (stack.size() > base) {
        auto [pc, pos] = stack.back();
        stack.pop_back();
        for (bool alive = true; alive;) {
            Instruction const& in = program_[pc];
            switch (in.op) {
                case Op::literal:
                    alive = pos < text.size() && text[pos] == in.a;
                    ++pc, ++pos;
                    break;
                case Op::char_class:
                    alive = pos < text.size() && classes_[in.a].contains(text[pos]);
                    ++pc, ++pos;
                    break;
                case Op::split:
                    stack.emplace_back(in.b, pos);
                    pc = in.a;
                    break;
                case Op::jump: pc = in.a; break;
                case Op::end_of_text:
                    alive = pos == text.size();
                    ++pc;
                    break;
                case Op::look_ahead:
                case Op::look_ahead_not: {
                    bool const found = run(pc + 1, text, pos, stack) != no_match;
                    alive = found == (in.op == Op::look_ahead);
                    pc = in.b;
                    break;
                }
                case Op::match: stack.resize(base); return pos;
            }
        }
    }
    return no_match;
}

}  // namespace rayo::llm
