//===- ReservedNames.h - Names a parameter is never printed as --*- C++ -*-===//
//
// A kernel parameter keeps the user's name in the printed source where it
// can, so that the MSL, CUDA and host C++ read like the Python. Some names
// mean something in a target before the kernel is read (keywords, macros,
// predefined types), and others are used by the kernel's own text
// (functions, types and constants it calls or names); a parameter with such
// a name would not compile, or compile into something else. Those get a
// trailing `_` in the printed source only: errors, `compiled.params` and
// `kernel_name` keep the user's names (docs/design/parameter-names.md).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_TARGET_CFAMILY_RESERVEDNAMES_H
#define ENIGMA_TARGET_CFAMILY_RESERVEDNAMES_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/StringSet.h"

#include <string>

namespace enigma {

/// Whether no target may see a parameter named `name`: a keyword,
/// predefined type or macro of MSL, CUDA C++ or host C++
/// (ReservedNames.def), a name reserved to C++ implementations (`__x`,
/// `_X`), Enigma's own prefixes, or the emitters' value names (v12, t3).
bool isReservedName(llvm::StringRef name);

/// `name`, or `name` with trailing `_`s when it is reserved or in `avoid`.
std::string unreservedName(llvm::StringRef name,
                           const llvm::StringSet<> &avoid);

/// The identifiers the kernel function in `text` uses, from the line that
/// declares `functionName` to the end: comments, string and character
/// literals, attribute arguments' spelling aside, and member names (after
/// `.` or `->`) are left out, since a parameter cannot clash with those.
llvm::StringSet<> identifiersOfKernelFunction(llvm::StringRef text,
                                              llvm::StringRef functionName);

} // namespace enigma

#endif
