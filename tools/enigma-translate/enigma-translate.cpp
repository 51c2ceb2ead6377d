//===- enigma-translate.cpp - Print enigma kernels as target source -------===//
#include "enigma/InitAll.h"

#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

static const char *const kOverview =
    "enigma-translate: print kernels of the enigma MLIR dialect as target\n"
    "source: --enigma-to-msl (Metal Shading Language), --enigma-to-cuda\n"
    "(CUDA C++ for NVRTC), --enigma-to-cpp (host C++ of the CPU backend).\n"
    "Reads a .mlir file (or stdin) and writes the source to stdout or -o.\n"
    "Example: enigma-opt k.mlir --enigma-optimize | enigma-translate --enigma-to-msl\n";

int main(int argc, char **argv) {
  enigma::registerAllTranslations();
  return mlir::failed(
      mlir::mlirTranslateMain(argc, argv, kOverview));
}
