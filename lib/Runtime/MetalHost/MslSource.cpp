//===- MslSource.cpp ------------------------------------------------------===//
#include "MslSource.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <string_view>

namespace enigma::metalhost {
namespace {

//===----------------------------------------------------------------------===//
// Lexer
//===----------------------------------------------------------------------===//

struct Token {
  enum Kind { Identifier, Number, Punctuation, Literal } kind;
  std::string_view text;
  size_t offset;
  unsigned line;
  bool is(std::string_view s) const { return text == s; }
  bool isIdentifier(std::string_view s) const {
    return kind == Identifier && text == s;
  }
};

bool identifierStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool identifierChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

std::vector<Token> lex(std::string_view s) {
  std::vector<Token> tokens;
  unsigned line = 1;
  bool lineStart = true; // only whitespace so far on this line
  size_t i = 0;
  while (i < s.size()) {
    char c = s[i];
    if (c == '\n') {
      ++line;
      lineStart = true;
      ++i;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n')
        ++i;
      continue;
    }
    if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n')
          ++line;
        ++i;
      }
      i += 2;
      continue;
    }
    if (c == '#' && lineStart) { // a preprocessor line, with continuations
      while (i < s.size() && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == '\n') {
          ++line;
          ++i;
        }
        ++i;
      }
      continue;
    }
    lineStart = false;
    size_t start = i;
    Token::Kind kind;
    if (identifierStart(c)) {
      while (i < s.size() && identifierChar(s[i]))
        ++i;
      kind = Token::Identifier;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < s.size() &&
                std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      while (i < s.size() &&
             (identifierChar(s[i]) || s[i] == '.' ||
              ((s[i] == '+' || s[i] == '-') &&
               std::strchr("eEpP", s[i - 1]) != nullptr)))
        ++i;
      kind = Token::Number;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < s.size() && s[i] != c && s[i] != '\n') {
        if (s[i] == '\\')
          ++i;
        ++i;
      }
      ++i;
      kind = Token::Literal;
    } else {
      ++i;
      if (c == ':' && i < s.size() && s[i] == ':')
        ++i;
      kind = Token::Punctuation;
    }
    tokens.push_back({kind, s.substr(start, std::min(i, s.size()) - start),
                      start, line});
  }
  return tokens;
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Constructs the runtime cannot run, by the identifier that shows them.
const std::map<std::string_view, const char *> &unsupportedTypes() {
  static const std::map<std::string_view, const char *> names = [] {
    std::map<std::string_view, const char *> m;
    for (const char *t :
         {"texture1d", "texture1d_array", "texture2d", "texture2d_array",
          "texture2d_ms", "texture2d_ms_array", "texture3d", "texturecube",
          "texturecube_array", "texture_buffer", "depth2d", "depth2d_array",
          "depth2d_ms", "depth2d_ms_array", "depthcube", "depthcube_array"})
      m[t] = "textures";
    m["sampler"] = "samplers";
    m["imageblock"] = "imageblocks";
    for (const char *t :
         {"acceleration_structure", "primitive_acceleration_structure",
          "instance_acceleration_structure", "intersection_function_table",
          "visible_function_table", "intersector"})
      m[t] = "ray tracing objects";
    return m;
  }();
  return names;
}

const std::set<std::string_view> &stageKeywords() {
  static const std::set<std::string_view> names = {
      "vertex", "fragment", "mesh", "object", "intersection", "visible"};
  return names;
}

/// Attributes of thread-position parameters: whether they may be vectors.
const std::map<std::string_view, bool> &positionAttributes() {
  static const std::map<std::string_view, bool> names = {
      {"thread_position_in_grid", true},
      {"thread_position_in_threadgroup", true},
      {"threadgroup_position_in_grid", true},
      {"threads_per_threadgroup", true},
      {"threads_per_grid", true},
      {"threadgroups_per_grid", true},
      {"dispatch_threads_per_threadgroup", true},
      {"grid_origin", true},
      {"grid_size", true},
      {"thread_index_in_threadgroup", false},
      {"thread_index_in_simdgroup", false},
      {"thread_index_in_quadgroup", false},
      {"simdgroup_index_in_threadgroup", false},
      {"quadgroup_index_in_threadgroup", false},
      {"threads_per_simdgroup", false},
      {"thread_execution_width", false},
      {"simdgroups_per_threadgroup", false},
      {"quadgroups_per_threadgroup", false},
      {"dispatch_simdgroups_per_threadgroup", false},
      {"dispatch_quadgroups_per_threadgroup", false},
  };
  return names;
}

bool isAttributeOpen(const std::vector<Token> &t, size_t i) {
  return i + 1 < t.size() && t[i].is("[") && t[i + 1].is("[") &&
         t[i + 1].offset == t[i].offset + 1;
}

/// Index just past the `]]` closing the attribute that opens at `i`.
size_t skipAttribute(const std::vector<Token> &t, size_t i) {
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i].is("["))
      ++depth;
    else if (t[i].is("]") && --depth == 0)
      return i + 1;
  }
  return t.size();
}

/// Index of the token closing the bracket that opens at `i`.
size_t matching(const std::vector<Token> &t, size_t i) {
  std::string_view open = t[i].text;
  std::string_view close = open == "(" ? ")" : open == "[" ? "]" : "}";
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i].text == open)
      ++depth;
    else if (t[i].text == close && --depth == 0)
      return i;
  }
  return t.size();
}

std::string join(const std::vector<Token> &t, size_t begin, size_t end,
                 const char *separator = " ") {
  std::string text;
  for (size_t i = begin; i < end; ++i) {
    if (i > begin)
      text += separator;
    text += t[i].text;
  }
  return text;
}

class Parser {
public:
  Parser(const std::string &text, const std::string &file)
      : tokens(lex(text)), file(file) {}

  [[noreturn]] void fail(unsigned line, const std::string &message) const {
    throw MslSourceError(file + ":" + std::to_string(line) + ": " + message);
  }

  void run(std::vector<MslKernel> &kernels,
           std::vector<MslFunctionConstant> &constants,
           std::vector<size_t> &shared) {
    int depth = 0;
    bool statementStart = true;
    for (size_t i = 0; i < tokens.size(); ++i) {
      const Token &t = tokens[i];
      if (t.kind == Token::Identifier) {
        auto unsupported = unsupportedTypes().find(t.text);
        if (unsupported != unsupportedTypes().end())
          fail(t.line, std::string(unsupported->second) +
                           " are not supported by the MSL host runtime (" +
                           std::string(t.text) +
                           "); it runs compute kernels on buffers");
      }
      if (t.is("{")) {
        ++depth;
        statementStart = true;
        continue;
      }
      if (t.is("}")) {
        --depth;
        statementStart = true;
        continue;
      }
      if (t.is(";")) {
        statementStart = true;
        continue;
      }
      if (depth == 0) {
        size_t next = topLevel(i, kernels, constants);
        if (next != i) {
          i = next - 1;
          statementStart = false;
          continue;
        }
      } else if (statementStart) {
        if (std::optional<size_t> at = sharedDeclaration(i))
          shared.push_back(*at);
      }
      statementStart = false;
    }
  }

private:
  /// Reads a kernel, stage function or function constant starting at `i`
  /// (at file scope); returns the index after it, or `i` if none starts.
  size_t topLevel(size_t i, std::vector<MslKernel> &kernels,
                  std::vector<MslFunctionConstant> &constants) {
    const Token &t = tokens[i];
    bool attributeForm = false;
    std::string_view keyword;
    if (t.kind == Token::Identifier &&
        (t.text == "kernel" || stageKeywords().count(t.text))) {
      keyword = t.text;
    } else if (isAttributeOpen(tokens, i) && i + 3 < tokens.size() &&
               tokens[i + 3].is("]") &&
               (tokens[i + 2].isIdentifier("kernel") ||
                stageKeywords().count(tokens[i + 2].text))) {
      keyword = tokens[i + 2].text;
      attributeForm = true;
    } else if (t.isIdentifier("constant")) {
      return functionConstant(i, constants);
    } else {
      return i;
    }
    size_t j = attributeForm ? skipAttribute(tokens, i) : i + 1;
    while (j < tokens.size() && isAttributeOpen(tokens, j))
      j = skipAttribute(tokens, j);
    // Another word for the same thing ("[[kernel]] kernel void")...
    if (j < tokens.size() && tokens[j].text == keyword)
      ++j;
    // "vertex" etc. are only stage keywords where a function follows.
    size_t open = j;
    while (open < tokens.size() && !tokens[open].is("(") &&
           !tokens[open].is(";") && !tokens[open].is("{") &&
           !tokens[open].is("="))
      ++open;
    if (open >= tokens.size() || !tokens[open].is("(") || open < j + 2)
      return i;
    const Token &name = tokens[open - 1];
    if (name.kind != Token::Identifier)
      return i;
    if (keyword != "kernel")
      fail(t.line, std::string(keyword) + " function " +
                       std::string(name.text) +
                       " is not supported by the MSL host runtime; it runs "
                       "compute (kernel) functions only");
    if (!(open == j + 2 && tokens[j].isIdentifier("void")))
      fail(t.line, "kernel " + std::string(name.text) +
                       " must return void, as Metal requires");
    size_t close = matching(tokens, open);
    if (close >= tokens.size())
      fail(name.line, "kernel " + std::string(name.text) +
                          ": its parameter list is not closed");
    MslKernel kernel;
    kernel.name = std::string(name.text);
    kernel.line = name.line;
    parseParams(kernel, open + 1, close);
    kernels.push_back(std::move(kernel));
    return close + 1;
  }

  void parseParams(MslKernel &kernel, size_t begin, size_t end) {
    size_t start = begin;
    int depth = 0;
    for (size_t i = begin; i <= end; ++i) {
      if (i == end || (depth == 0 && tokens[i].is(","))) {
        if (i > start)
          kernel.params.push_back(parseParam(kernel, start, i));
        start = i + 1;
        continue;
      }
      std::string_view s = tokens[i].text;
      if (s == "(" || s == "[" || s == "<" || s == "{")
        ++depth;
      else if (s == ")" || s == "]" || s == ">" || s == "}")
        --depth;
    }
    std::set<unsigned> seen;
    for (const MslParam &p : kernel.params)
      if (p.kind != MslParam::Kind::Position &&
          p.kind != MslParam::Kind::Threadgroup &&
          !seen.insert(p.bufferIndex).second)
        fail(p.line, "kernel " + kernel.name + ": two parameters use [[buffer(" +
                         std::to_string(p.bufferIndex) + ")]]");
  }

  MslParam parseParam(const MslKernel &kernel, size_t begin, size_t end) {
    MslParam p;
    p.line = tokens[begin].line;
    size_t attribute = end;
    for (size_t i = begin; i < end; ++i)
      if (isAttributeOpen(tokens, i)) {
        attribute = i;
        break;
      }
    size_t nameAt = attribute;
    while (nameAt > begin && tokens[nameAt - 1].kind != Token::Identifier)
      --nameAt;
    if (nameAt == begin)
      fail(p.line, "kernel " + kernel.name + ": a parameter has no name");
    p.name = std::string(tokens[nameAt - 1].text);
    std::string what = "kernel " + kernel.name + ", parameter " + p.name;
    size_t typeEnd = nameAt - 1;
    if (typeEnd == begin)
      fail(p.line, what + " has no type");
    p.typeText = join(tokens, begin, typeEnd);
    std::string element;
    for (size_t i = begin; i < typeEnd; ++i) {
      std::string_view s = tokens[i].text;
      auto unsupported = unsupportedTypes().find(s);
      if (unsupported != unsupportedTypes().end())
        fail(p.line, what + ": " + unsupported->second +
                         " are not supported by the MSL host runtime (" +
                         std::string(s) + "); it runs compute kernels on "
                         "buffers");
      if (s == "device" || s == "constant" || s == "threadgroup" ||
          s == "thread" || s == "threadgroup_imageblock" || s == "ray_data" ||
          s == "object_data") {
        p.addressSpace = std::string(s);
      } else if (s == "*") {
        p.isPointer = true;
      } else if (s == "&") {
        p.isReference = true;
      } else if (s != "const" && s != "volatile" && s != "restrict" &&
                 s != "__restrict") {
        element += std::string(s);
      }
    }
    if (element.rfind("metal::", 0) == 0)
      element = element.substr(7);
    p.elementType = element;

    if (attribute == end)
      fail(p.line, what + " has no attribute: a kernel parameter needs "
                          "[[buffer(n)]] or a thread-position attribute such "
                          "as [[thread_position_in_grid]]");
    size_t attributeEnd = skipAttribute(tokens, attribute);
    if (attributeEnd != end)
      fail(tokens[attributeEnd < end ? attributeEnd : attribute].line,
           what + ": unexpected text after its attribute");
    if (attribute + 2 >= end ||
        tokens[attribute + 2].kind != Token::Identifier)
      fail(p.line, what + ": unreadable attribute");
    std::string_view attr = tokens[attribute + 2].text;
    std::string attrText = "[[" + join(tokens, attribute + 2, attributeEnd - 2, "") + "]]";

    if (attr == "buffer") {
      if (!(attribute + 5 < end && tokens[attribute + 3].is("(") &&
            tokens[attribute + 4].kind == Token::Number &&
            tokens[attribute + 5].is(")")))
        fail(p.line, what + ": [[buffer(n)]] needs a constant index");
      p.bufferIndex = unsigned(std::stoul(std::string(tokens[attribute + 4].text)));
      if (!(p.isPointer || p.isReference) ||
          (p.addressSpace != "device" && p.addressSpace != "constant"))
        fail(p.line, what + " (" + p.typeText + ") has " + attrText +
                         ", which needs a device or constant pointer or "
                         "reference");
      unsigned width = 1;
      std::optional<DType> dtype = dtypeOfMslType(p.elementType, width);
      p.kind = p.isReference && !p.isPointer && p.addressSpace == "constant" &&
                       dtype && width == 1
                   ? MslParam::Kind::Scalar
                   : MslParam::Kind::Buffer;
      return p;
    }
    auto position = positionAttributes().find(attr);
    if (position != positionAttributes().end()) {
      p.kind = MslParam::Kind::Position;
      p.attribute = std::string(attr);
      unsigned width = 1;
      std::optional<DType> dtype = dtypeOfMslType(p.elementType, width);
      bool integer = dtype && (*dtype == DType::U32 || *dtype == DType::U16);
      if (p.isPointer || p.isReference || !p.addressSpace.empty() ||
          !integer || width > 3 || (width > 1 && !position->second))
        fail(p.line, what + " (" + p.typeText + ") has " + attrText +
                         ", which needs " +
                         (position->second ? "uint, uint2 or uint3 (or ushort "
                                             "forms)"
                                           : "uint or ushort"));
      p.components = width;
      return p;
    }
    if (attr == "threadgroup") {
      if (!(attribute + 5 < end && tokens[attribute + 3].is("(") &&
            tokens[attribute + 4].kind == Token::Number &&
            tokens[attribute + 5].is(")")))
        fail(p.line, what + ": [[threadgroup(n)]] needs a constant index");
      if (tokens[attribute + 4].text != "0")
        fail(p.line, what + ": the MSL host runtime gives threadgroup "
                            "memory at index 0 only ([[threadgroup(0)]])");
      if (!p.isPointer || p.addressSpace != "threadgroup")
        fail(p.line, what + " (" + p.typeText + ") has " + attrText +
                         ", which needs a threadgroup pointer");
      p.kind = MslParam::Kind::Threadgroup;
      p.attributeBegin = tokens[attribute].offset;
      p.attributeEnd = tokens[attributeEnd - 1].offset +
                       tokens[attributeEnd - 1].text.size();
      return p;
    }
    if (attr == "texture" || attr == "sampler")
      fail(p.line, what + ": " + std::string(attr) +
                       "s are not supported by the MSL host runtime");
    fail(p.line, what + ": the attribute " + attrText +
                     " is not supported by the MSL host runtime (it takes "
                     "[[buffer(n)]] and thread-position attributes)");
  }

  /// `constant T name [[function_constant(i)]];` at `i`.
  size_t functionConstant(size_t i,
                          std::vector<MslFunctionConstant> &constants) {
    size_t end = i + 1;
    while (end < tokens.size() && !tokens[end].is(";") &&
           !tokens[end].is("{") && !tokens[end].is("="))
      ++end;
    if (end >= tokens.size() || !tokens[end].is(";"))
      return i;
    size_t attribute = i + 1;
    while (attribute < end && !isAttributeOpen(tokens, attribute))
      ++attribute;
    if (attribute == end || attribute + 2 >= end ||
        !tokens[attribute + 2].isIdentifier("function_constant"))
      return i;
    size_t attributeEnd = skipAttribute(tokens, attribute);
    if (!(tokens[attribute + 3].is("(") &&
          tokens[attribute + 4].kind == Token::Number &&
          tokens[attribute + 5].is(")")) ||
        attribute < i + 3 || tokens[attribute - 1].kind != Token::Identifier)
      fail(tokens[i].line, "unreadable function constant declaration");
    MslFunctionConstant c;
    c.name = std::string(tokens[attribute - 1].text);
    c.type = join(tokens, i + 1, attribute - 1);
    c.index = unsigned(std::stoul(std::string(tokens[attribute + 4].text)));
    c.line = tokens[i].line;
    c.attributeBegin = tokens[attribute].offset;
    c.attributeEnd =
        tokens[attributeEnd - 1].offset + tokens[attributeEnd - 1].text.size();
    c.statementEnd = tokens[end].offset + 1;
    constants.push_back(c);
    return end + 1;
  }

  /// A statement at `i` (in a function body) that declares threadgroup
  /// variables (not pointers to threadgroup memory): where to insert.
  std::optional<size_t> sharedDeclaration(size_t i) {
    size_t j = i;
    while (j < tokens.size()) {
      if (tokens[j].isIdentifier("alignas") && j + 1 < tokens.size() &&
          tokens[j + 1].is("("))
        j = matching(tokens, j + 1) + 1;
      else if (isAttributeOpen(tokens, j))
        j = skipAttribute(tokens, j);
      else if (tokens[j].isIdentifier("const") ||
               tokens[j].isIdentifier("volatile"))
        ++j;
      else
        break;
    }
    if (j >= tokens.size() || !tokens[j].isIdentifier("threadgroup"))
      return std::nullopt;
    // A pointer or reference declarator (`threadgroup float *p = ...`)
    // declares an ordinary variable.
    int angle = 0;
    for (size_t k = j + 1; k < tokens.size(); ++k) {
      std::string_view s = tokens[k].text;
      if (s == "<")
        ++angle;
      else if (s == ">")
        --angle;
      else if (angle == 0 && (s == "*" || s == "&" || s == "("))
        return std::nullopt;
      else if (angle == 0 && (s == "[" || s == ";" || s == "=" || s == ","))
        break;
    }
    // After `alignas(...)`, which must lead the declaration.
    return tokens[j].offset;
  }

  std::vector<Token> tokens;
  const std::string &file;
};

std::string hexBits(uint64_t bits) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llxull",
                static_cast<unsigned long long>(bits));
  return text;
}
} // namespace

//===----------------------------------------------------------------------===//
// MslSource
//===----------------------------------------------------------------------===//

bool MslKernel::takesThreadgroupMemory() const {
  for (const MslParam &p : params)
    if (p.kind == MslParam::Kind::Threadgroup)
      return true;
  return false;
}

std::vector<const MslParam *> MslKernel::bindings() const {
  std::vector<const MslParam *> bound;
  for (const MslParam &p : params)
    if (p.kind != MslParam::Kind::Position &&
        p.kind != MslParam::Kind::Threadgroup)
      bound.push_back(&p);
  std::stable_sort(bound.begin(), bound.end(),
                   [](const MslParam *a, const MslParam *b) {
                     return a->bufferIndex < b->bufferIndex;
                   });
  return bound;
}

MslSource MslSource::parse(std::string text, std::string fileName) {
  MslSource source;
  source.source = std::move(text);
  source.file = std::move(fileName);
  Parser(source.source, source.file)
      .run(source.kernelList, source.constants, source.sharedDeclarations);
  return source;
}

const MslKernel &MslSource::kernel(const std::string &name) const {
  for (const MslKernel &k : kernelList)
    if (k.name == name)
      return k;
  std::string names;
  for (const MslKernel &k : kernelList)
    names += (names.empty() ? "" : ", ") + k.name;
  throw MslSourceError(file + ": no kernel function named '" + name + "'" +
                       (names.empty() ? std::string(" (the source has no "
                                                    "kernel functions)")
                                      : " (kernels: " + names + ")"));
}

std::string MslSource::adapted(const ConstantValues &values) const {
  struct Edit {
    size_t begin, end; // replaced range
    std::string text;
  };
  std::vector<Edit> edits;
  for (size_t at : sharedDeclarations)
    edits.push_back({at, at, "static thread_local "});
  for (const MslKernel &k : kernelList)
    for (const MslParam &p : k.params)
      if (p.kind == MslParam::Kind::Threadgroup)
        edits.push_back({p.attributeBegin, p.attributeEnd, ""});
  for (const MslFunctionConstant &c : constants) {
    auto value = values.find(c.index);
    bool defined = value != values.end();
    std::string init =
        defined ? " = ::metal::enigma_detail::function_constant<" +
                      std::string(mslTypeName(value->second.dtype)) + ">(" +
                      hexBits(value->second.bits) + ")"
                : " = {}";
    edits.push_back({c.attributeBegin, c.attributeEnd, init});
    edits.push_back({c.statementEnd, c.statementEnd,
                     " constexpr bool enigma_function_constant_defined_" +
                         c.name + " = " + (defined ? "true" : "false") + ";"});
  }
  std::sort(edits.begin(), edits.end(),
            [](const Edit &a, const Edit &b) { return a.begin < b.begin; });
  std::string out;
  size_t at = 0;
  for (const Edit &e : edits) {
    out.append(source, at, e.begin - at);
    out += e.text;
    // Keep every line where it was.
    out.append(size_t(std::count(source.begin() + e.begin,
                                 source.begin() + e.end, '\n')),
               '\n');
    at = e.end;
  }
  out.append(source, at, std::string::npos);
  return out;
}

const char *mslTypeName(DType type) { return mslName(type); }

std::optional<DType> dtypeOfMslType(const std::string &type, unsigned &width) {
  static const std::map<std::string, DType> fixedWidth = {
      {"int8_t", DType::I8},   {"uint8_t", DType::U8},
      {"int16_t", DType::I16}, {"uint16_t", DType::U16},
      {"int32_t", DType::I32}, {"uint32_t", DType::U32},
      {"int64_t", DType::I64}, {"uint64_t", DType::U64},
      {"unsignedint", DType::U32}, {"unsignedchar", DType::U8},
      {"unsignedshort", DType::U16}, {"unsignedlong", DType::U64},
  };
  width = 1;
  auto fixed = fixedWidth.find(type);
  if (fixed != fixedWidth.end())
    return fixed->second;
  std::string base = type;
  if (!base.empty() && base.back() >= '2' && base.back() <= '4' &&
      base.size() > 1 && std::isalpha(static_cast<unsigned char>(
                             base[base.size() - 2]))) {
    width = unsigned(base.back() - '0');
    base.pop_back();
  }
  static const std::map<std::string, DType> names = {
      {"float", DType::F32}, {"half", DType::F16},   {"bfloat", DType::BF16},
      {"char", DType::I8},   {"uchar", DType::U8},   {"short", DType::I16},
      {"ushort", DType::U16}, {"int", DType::I32},   {"uint", DType::U32},
      {"long", DType::I64},  {"ulong", DType::U64},  {"bool", DType::Bool},
  };
  auto named = names.find(base);
  if (named == names.end()) {
    width = 1;
    return std::nullopt;
  }
  return named->second;
}

} // namespace enigma::metalhost
