//===- SerializeThreads.h - A group's threads one after another -*- C++ -*-===//
//
// The pass's state and steps (SerializeThreads.cpp: the thread loops and
// group-level constructs, the driver; SerializeThreadArrays.cpp: the
// per-thread arrays and the simdgroup functions over them). The overview
// of the rewrite is at the top of SerializeThreads.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_DIALECT_ENIGMA_TRANSFORMS_SERIALIZETHREADS_H
#define ENIGMA_DIALECT_ENIGMA_TRANSFORMS_SERIALIZETHREADS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace enigma {
namespace serialize {

using namespace mlir;

/// Where all threads of a group (or of a simdgroup) must arrive together.
bool isCutPoint(Operation *op);
bool holdsCutPoint(Operation *root);
bool isGroupLevel(Operation *op);
/// Whether the condition or bounds of a group-level scf.if / scf.for may
/// differ between the simdgroups of a threadgroup.
bool variesBetweenSimdgroups(Operation *op);
bool hasFragmentType(Operation *op);

class Serializer {
public:
  explicit Serializer(KernelOp kernel)
      : kernel(kernel), entry(&kernel.getBody().front()),
        b(kernel.getContext()) {}

  LogicalResult run();

private:
  // --- Step 1-3: thread loops and group-level constructs ------------------
  LogicalResult structure(Block &block, Value sg);
  void closeRun(SmallVectorImpl<Operation *> &run, Value sg);
  bool staysAtGroupLevel(Operation *op);
  bool isGroupValue(Value v);
  LogicalResult handleGroupLevel(Operation *op, Value sg);
  LogicalResult handleFor(scf::ForOp op, Operation *outer, Value outerSg,
                          Value sg);
  LogicalResult handleIf(scf::IfOp op, Operation *outer, Value sg);
  LogicalResult handleWhile(scf::WhileOp op, Operation *outer,
                            Value outerSg, Value sg);
  ThreadLoopOp loopBefore(Operation *pos, Value sg);
  Value placeholder(Value array, OpBuilder::InsertPoint at);

  // --- Step 4: per-thread arrays --------------------------------------------
  LogicalResult spillAcrossLoops();
  LogicalResult routeUses(Value value, Value array, ThreadLoopOp home);
  LogicalResult sliceRegisterArray(memref::AllocaOp alloca, ThreadLoopOp home);
  Value loadIn(Value array, ThreadLoopOp loop);
  Value laneIndex(Operation *user);

  // --- Step 5: simdgroup functions ------------------------------------------
  LogicalResult lowerCollective(Operation *op, Value sg);
  Value arrayArg(Operation *op, Value v, Value sg);
  Value laneArg(Value v);

  // --- Helpers ----------------------------------------------------------------
  FailureOr<Value> newArray(Operation *user, Type element, int64_t size = 1);
  /// A per-thread array for each of `values` (carried values or results
  /// of a group-level construct), which become per-thread values.
  LogicalResult perThreadArrays(Operation *op, ValueRange values,
                                SmallVectorImpl<Value> &arrays);
  /// Stores `values` into `arrays` at the end of `loop`, each in the slot
  /// of the thread being run.
  void storeAtEnd(ThreadLoopOp loop, ValueRange values, ValueRange arrays,
                  Location loc);
  /// Replaces the results of the construct `outer` stands for by reads of
  /// their per-thread arrays after it.
  void replaceResults(ValueRange results, ValueRange arrays, Operation *outer);
  Value lid(ThreadLoopOp loop);
  Value threadsInGroup();
  void atSetup();
  void doneSetup(Operation *op) { setupEnd = op; }
  Value constantI32(int32_t v, Location loc);
  Value constantIndex(int64_t v, Location loc);

  KernelOp kernel;
  Block *entry;
  OpBuilder b;
  Operation *setupEnd = nullptr; // last op of the group-level prologue
  bool hasCutPoints = false;
  Value groupThreads;

  llvm::DenseSet<Operation *> perSimdgroup; // constructs run per simdgroup
  llvm::DenseSet<Operation *> sgLoops;      // the loops over simdgroups
  llvm::DenseSet<Value> perThread;          // per-thread values at group level
  llvm::DenseSet<Operation *> runOps;       // the block being cut, in runs
  llvm::MapVector<Value, Value> arrayOf;    // value -> its per-thread array
  llvm::SmallVector<Operation *> placeholders;
  llvm::SmallVector<std::pair<Operation *, Value>> collectives;
  llvm::DenseMap<Operation *, Value> lidOf;
  llvm::DenseMap<Operation *, Operation *> prologueEnd; // per thread loop
  llvm::DenseMap<std::pair<Value, Operation *>, Value> loaded;
};

} // namespace serialize
} // namespace enigma

#endif
