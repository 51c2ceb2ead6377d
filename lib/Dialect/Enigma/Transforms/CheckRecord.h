//===- CheckRecord.h - The violation record of bounds-checked mode -*- C++ -*-===//
//
// The passes of bounds-checked mode (accesses, integer arithmetic,
// threadgroup memory and simdgroup lanes) share one hidden record buffer
// per kernel (enigma/Support/BoundsRecord.h) and one site table, the kernel
// attribute `enigma.bounds_sites`. This class appends the record and the
// sites and builds the code that fills the record in.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_DIALECT_ENIGMA_TRANSFORMS_CHECKRECORD_H
#define ENIGMA_LIB_DIALECT_ENIGMA_TRANSFORMS_CHECKRECORD_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/IR/Builders.h"

namespace enigma {

/// The attribute marking the `scf.if` of a check: it writes only the hidden
/// record, which no user access reads (enigma-guard-selected-loads moves
/// loads past it).
inline constexpr const char *kCheckAttr = "enigma.check";

class CheckRecord {
public:
  explicit CheckRecord(KernelOp kernel);

  /// A hidden parameter after the user's: `name` of `dtype`, carrying the
  /// attribute `marker`.
  mlir::BlockArgument appendParam(mlir::Type type, const std::string &name,
                                  const char *dtype,
                                  mlir::NamedAttribute marker);

  /// The record buffer, appended on first use.
  mlir::BlockArgument record();

  /// Appends a site with `fields` (access sites have no `kind`; the others
  /// name theirs) to the kernel's site table; returns its id.
  unsigned addSite(llvm::ArrayRef<mlir::NamedAttribute> fields);

  /// At the builder's point: claims the record, adds one to the count in
  /// word `countWord` (bounds_record::kCount...) and, in the first violating
  /// thread, writes `site`, `first` and `second` (integers or indices,
  /// sign-extended when `isSigned`; `second` may be null) and the thread's
  /// grid position.
  void record(mlir::OpBuilder &b, mlir::Location loc, unsigned countWord,
              unsigned site, mlir::Value first, mlir::Value second,
              bool isSigned);

  /// `if (failed) record(...)`, marked as a check.
  void recordIf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value failed,
                unsigned countWord, unsigned site, mlir::Value first,
                mlir::Value second, bool isSigned);

private:
  KernelOp kernel;
  mlir::BlockArgument recordArg;
};

} // namespace enigma

#endif
