//===- KernelQueries.h - Facts about a kernel the emitters share -*- C++ -*-===//
#ifndef ENIGMA_LIB_TARGET_CFAMILY_KERNELQUERIES_H
#define ENIGMA_LIB_TARGET_CFAMILY_KERNELQUERIES_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include <optional>
#include <string>

namespace enigma {

/// The source-level name of a kernel: "enigma_kernel_<symbol>".
std::string kernelFunctionName(KernelOp kernel);

/// The Metal attribute name of a thread query ("thread_position_in_grid").
llvm::StringRef metalQueryName(mlir::Operation *query);
/// The queried dimension (0, 1, 2), or none for the scalar queries.
std::optional<unsigned> queryDim(mlir::Operation *query);

/// Index in "xyz" of a dim.
inline char dimLetter(unsigned d) { return "xyz"[d]; }

} // namespace enigma

#endif
