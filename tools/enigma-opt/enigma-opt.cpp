//===- enigma-opt.cpp - Parse, verify and transform enigma IR -------------===//
#include "enigma/InitAll.h"

#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  enigma::registerAllDialects(registry);
  enigma::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "Enigma optimizer driver\n", registry));
}
