//===- CheckRecord.cpp - The violation record of bounds-checked mode ------===//
#include "CheckRecord.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Support/BoundsRecord.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace enigma {
namespace rec = bounds_record;

CheckRecord::CheckRecord(KernelOp kernel) : kernel(kernel) {
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (kernel.getArgAttr(i, "enigma.bounds_record"))
      recordArg = kernel.getArgument(i);
}

BlockArgument CheckRecord::appendParam(Type type, const std::string &name,
                                       const char *dtype,
                                       NamedAttribute marker) {
  Builder b(kernel.getContext());
  unsigned index = kernel.getNumArguments();
  auto attrs = b.getDictionaryAttr(
      {b.getNamedAttr("enigma.name", b.getStringAttr(name)),
       b.getNamedAttr("enigma.dtype", b.getStringAttr(dtype)), marker});
  kernel.insertArgument(index, type, attrs, kernel.getLoc());
  return kernel.getArgument(index);
}

BlockArgument CheckRecord::record() {
  if (!recordArg) {
    Builder b(kernel.getContext());
    recordArg = appendParam(
        getBufferType(b.getI32Type(), AddressSpace::Device),
        rec::kRecordParamName, "u32",
        b.getNamedAttr("enigma.bounds_record", b.getUnitAttr()));
  }
  return recordArg;
}

unsigned CheckRecord::addSite(ArrayRef<NamedAttribute> fields) {
  Builder b(kernel.getContext());
  SmallVector<Attribute> sites;
  if (auto existing = kernel->getAttrOfType<ArrayAttr>("enigma.bounds_sites"))
    sites.assign(existing.begin(), existing.end());
  sites.push_back(b.getDictionaryAttr(fields));
  kernel->setAttr("enigma.bounds_sites", b.getArrayAttr(sites));
  return unsigned(sites.size() - 1);
}

namespace {
/// `value` (an integer or index) as an i64.
Value widen(OpBuilder &b, Location loc, Value value, bool isSigned) {
  Type i64 = b.getI64Type();
  Type type = value.getType();
  if (type.isIndex())
    return isSigned ? b.create<arith::IndexCastOp>(loc, i64, value).getResult()
                    : b.create<arith::IndexCastUIOp>(loc, i64, value)
                          .getResult();
  unsigned width = type.getIntOrFloatBitWidth();
  if (width == 64)
    return value;
  return isSigned ? b.create<arith::ExtSIOp>(loc, i64, value).getResult()
                  : b.create<arith::ExtUIOp>(loc, i64, value).getResult();
}
} // namespace

void CheckRecord::record(OpBuilder &b, Location loc, unsigned countWord,
                         unsigned site, Value first, Value second,
                         bool isSigned) {
  MLIRContext *ctx = kernel.getContext();
  Value buffer = record();
  auto indexConstant = [&](int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v);
  };
  auto i32Constant = [&](int64_t v) {
    return b.create<arith::ConstantIntOp>(loc, v, 32);
  };
  auto relaxed = MemoryOrderAttr::get(ctx, MemoryOrder::Relaxed);
  auto rmw = [&](AtomicKind kind, unsigned word) {
    return b.create<AtomicRMWOp>(loc, b.getI32Type(),
                                 AtomicKindAttr::get(ctx, kind), buffer,
                                 indexConstant(word), i32Constant(1), relaxed);
  };
  Value previous = rmw(AtomicKind::Or, rec::kClaim);
  rmw(AtomicKind::Add, countWord);
  Value isFirst = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                          previous, i32Constant(0));
  auto ifFirst = b.create<scf::IfOp>(loc, isFirst, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifFirst.thenBlock());
  auto store = [&](Value value, unsigned word) {
    b.create<memref::StoreOp>(loc, value, buffer,
                              ValueRange{indexConstant(word)});
  };
  auto storeWide = [&](Value value, unsigned low, unsigned high) {
    Value wide = widen(b, loc, value, isSigned);
    Value top = b.create<arith::ShRUIOp>(
        loc, wide, b.create<arith::ConstantIntOp>(loc, 32, 64));
    store(b.create<arith::TruncIOp>(loc, b.getI32Type(), wide), low);
    store(b.create<arith::TruncIOp>(loc, b.getI32Type(), top), high);
  };
  store(i32Constant(site + 1), rec::kSite);
  storeWide(first, rec::kIndexLow, rec::kIndexHigh);
  if (second)
    storeWide(second, rec::kSecondLow, rec::kSecondHigh);
  const unsigned words[3] = {rec::kThreadX, rec::kThreadY, rec::kThreadZ};
  for (unsigned d = 0; d < 3; ++d)
    store(b.create<ThreadPositionInGridOp>(
              loc, DimAttr::get(ctx, static_cast<Dim>(d))),
          words[d]);
}

void CheckRecord::recordIf(OpBuilder &b, Location loc, Value failed,
                           unsigned countWord, unsigned site, Value first,
                           Value second, bool isSigned) {
  auto check = b.create<scf::IfOp>(loc, failed, /*withElse=*/false);
  check->setAttr(kCheckAttr, b.getUnitAttr());
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(check.thenBlock());
  record(b, loc, countWord, site, first, second, isSigned);
}

} // namespace enigma
