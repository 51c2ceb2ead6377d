//===- enigma-opt-fuzz.cpp - libFuzzer target: parse and verify enigma IR -===//
//
// Each input is MLIR text. It is parsed with the dialects enigma-opt
// registers and verified (ParserConfig's verifyAfterParse, as enigma-opt
// does before running passes). Diagnostics are swallowed: rejecting bad
// input is the expected outcome; only crashes, sanitizer reports and hangs
// are findings. Built and run by scripts/fuzz_opt.sh.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

namespace {

/// The same dialects as enigma::registerAllDialects (lib/InitAll.cpp). That
/// function lives in an object that also pulls in the compiler and the
/// emitters, so the list is repeated here; keep the two in step.
const mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry();
    reg->insert<enigma::EnigmaDialect, mlir::arith::ArithDialect,
                mlir::math::MathDialect, mlir::memref::MemRefDialect,
                mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
    return reg;
  }();
  return *r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // A fresh context per input: uniqued types and attributes would otherwise
  // accumulate over millions of inputs and look like a leak.
  mlir::MLIRContext context(registry(), mlir::MLIRContext::Threading::DISABLED);
  mlir::ScopedDiagnosticHandler quiet(
      &context, [](mlir::Diagnostic &) { return mlir::success(); });
  llvm::SourceMgr sources;
  sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(
          llvm::StringRef(reinterpret_cast<const char *>(data), size),
          "fuzz-input"),
      llvm::SMLoc());
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/true);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(sources, config);
  (void)module;
  return 0;
}
