//===- ReservedNames.cpp --------------------------------------------------===//
#include "ReservedNames.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

namespace enigma {

/// Keywords, predefined types and macros, and the emitters' value names.
static bool isReservedWord(llvm::StringRef name) {
  static const llvm::StringSet<> table = {
#define ENIGMA_RESERVED(word) #word,
#include "ReservedNames.def"
  };
  if (table.contains(name))
    return true;
  // Value names are v<N> and temporaries t<N>.
  return name.size() > 1 && (name[0] == 'v' || name[0] == 't') &&
         llvm::all_of(name.drop_front(), llvm::isDigit);
}

/// Names reserved to C++ implementations (__x, _X) and Enigma's prefixes,
/// which the emitters' own identifiers use (none of them ends in `_`).
static bool hasReservedPrefix(llvm::StringRef name) {
  return name.starts_with("__") ||
         (name.size() > 1 && name[0] == '_' && llvm::isUpper(name[1])) ||
         name.starts_with("enigma_") || name.starts_with("ENIGMA_") ||
         name.starts_with("METAL_");
}

bool isReservedName(llvm::StringRef name) {
  return isReservedWord(name) || hasReservedPrefix(name);
}

std::string unreservedName(llvm::StringRef name,
                           const llvm::StringSet<> &avoid) {
  std::string out = name.str();
  if (isReservedName(out) || avoid.contains(out))
    out += "_";
  while (isReservedWord(out) || avoid.contains(out))
    out += "_";
  return out;
}

static bool isIdentifierStart(char c) {
  return llvm::isAlpha(c) || c == '_';
}
static bool isIdentifierChar(char c) {
  return llvm::isAlnum(c) || c == '_';
}

llvm::StringSet<> identifiersOfKernelFunction(llvm::StringRef text,
                                              llvm::StringRef functionName) {
  llvm::StringSet<> out;
  size_t at = text.find((functionName + "(").str());
  if (at == llvm::StringRef::npos)
    at = 0;
  at = text.rfind('\n', at) == llvm::StringRef::npos ? 0
                                                      : text.rfind('\n', at);
  char previous = ' ';   // last character that is not a space
  char beforeThat = ' '; // the one before it (for "->")
  auto remember = [&](char c) {
    beforeThat = previous;
    previous = c;
  };
  for (size_t i = at; i < text.size();) {
    char c = text[i];
    if (text.substr(i).starts_with("//")) {
      i = text.find('\n', i);
      if (i == llvm::StringRef::npos)
        break;
      continue;
    }
    if (text.substr(i).starts_with("/*")) {
      i = text.find("*/", i + 2);
      if (i == llvm::StringRef::npos)
        break;
      i += 2;
      continue;
    }
    if (c == '"' || c == '\'') {
      for (++i; i < text.size() && text[i] != c; ++i)
        if (text[i] == '\\')
          ++i;
      ++i;
      remember(c);
      continue;
    }
    if (isIdentifierStart(c) && (i == 0 || !isIdentifierChar(text[i - 1]))) {
      size_t end = i;
      while (end < text.size() && isIdentifierChar(text[end]))
        ++end;
      bool member = previous == '.' || (previous == '>' && beforeThat == '-');
      if (!member)
        out.insert(text.slice(i, end));
      i = end;
      remember('a');
      continue;
    }
    if (!llvm::isSpace(c))
      remember(c);
    ++i;
  }
  return out;
}

} // namespace enigma
