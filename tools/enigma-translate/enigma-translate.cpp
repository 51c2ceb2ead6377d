//===- enigma-translate.cpp - Print enigma kernels as target source -------===//
#include "enigma/InitAll.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  enigma::registerAllTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, "Enigma translation driver\n"));
}
