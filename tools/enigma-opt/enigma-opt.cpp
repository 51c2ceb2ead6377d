//===- enigma-opt.cpp - Parse, verify and transform enigma IR -------------===//
#include "enigma/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

static const char *const kOverview =
    "enigma-opt: parse, verify and transform kernels in the enigma MLIR\n"
    "dialect. Reads a .mlir file (or stdin), runs the passes named on the\n"
    "command line (--enigma-optimize: the pipeline `enigma.compile` uses;\n"
    "--enigma-bounds-check; --enigma-guard-selected-loads) and prints the\n"
    "result; with no pass it only parses and verifies.\n"
    "Example: enigma-opt kernel.mlir --enigma-optimize\n";

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  enigma::registerAllDialects(registry);
  enigma::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, kOverview, registry));
}
