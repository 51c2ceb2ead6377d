//===- enigma-opt-fuzz.cpp - libFuzzer target: parse and verify enigma IR -===//
//
// Each input is MLIR text. It is parsed with the dialects enigma-opt
// registers and verified (ParserConfig's verifyAfterParse, as enigma-opt
// does before running passes). Diagnostics are swallowed: rejecting bad
// input is the expected outcome; only crashes, sanitizer reports and hangs
// are findings. Built and run by scripts/fuzz_opt.sh.
//
//===----------------------------------------------------------------------===//
#include "enigma/InitAll.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <cstddef>
#include <cstdint>

namespace {

/// The dialects every enigma tool registers (lib/InitAll.cpp).
const mlir::DialectRegistry &registry() {
  static mlir::DialectRegistry *r = [] {
    auto *reg = new mlir::DialectRegistry();
    enigma::registerAllDialects(*reg);
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
