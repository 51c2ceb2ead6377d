//===- Float8.cpp - The 8-bit float family ---------------------------------===//
#include "enigma/Builder/Float8.h"

#include "BuilderImpl.h"

#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h"

using namespace mlir;

namespace enigma {

Value saturatingCast(KernelBuilder &k, Value x, DType to) {
  checkOwner(&k, x, "saturating_cast");
  if (!isFloat8(to))
    throw EnigmaError(std::string("saturating_cast converts to an 8-bit "
                                  "float (f8e4m3 or f8e5m2), not ") +
                      shortName(to) + "; use metal_cast");
  // Other 8-bit floats, integers and bool go through f32 (exact up to
  // 2^24, far beyond either format's range).
  DType from = x.dtype();
  if (from != DType::F32 && from != DType::F16 && from != DType::BF16)
    x = k.cast(x, DType::F32);
  KernelBuilder::Impl &impl = k.internals();
  Type type = mlirType(&impl.context, to, x.lanes());
  auto op = impl.builder.create<TruncFSatOp>(impl.location, type, raw(x));
  return wrap(&k, op.getResult(), to);
}

} // namespace enigma
