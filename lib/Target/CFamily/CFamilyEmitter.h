//===- CFamilyEmitter.h - The shared C-family walker ------------*- C++ -*-===//
//
// Walks an enigma.kernel and prints C-family statements. Everything that
// reads the same in MSL, CUDA and host C++ (arithmetic, casts, loads and
// stores, structured control flow) is printed here; each target subclass
// supplies the signature, thread queries and barriers.
//
// Integers are signless in the IR, so values are held in the *unsigned* C
// type of their width (wrap-around is defined for unsigned arithmetic in every
// C dialect) and signed operations cast their operands to the signed type.
// Every value name is v<N>, numbered in order of definition, so the text is
// stable across runs.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_TARGET_CFAMILY_CFAMILYEMITTER_H
#define ENIGMA_LIB_TARGET_CFAMILY_CFAMILYEMITTER_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Target/Emit.h"

#include "KernelQueries.h"
#include "ReservedNames.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

namespace enigma {

/// What family code prints differently on each target, as data: each target
/// gives its table (spellings()) in its emitter file. Ops a target prints
/// wholly in its own way (async copies, simdgroup matrices, CUDA's dynamic
/// shared memory) go to its emitTargetOp instead.
struct TargetSpellings {
  /// Written before a threadgroup array: "threadgroup ", "__shared__ ", "".
  const char *threadgroupArray;
  /// Metal's atomics: memory used atomically has an atomic element type
  /// (device atomic_uint*) and is read and written through a view printed
  /// at file scope, one lane at a time in vector accesses; every order
  /// prints as relaxed, the only one Metal honours (EmitCooperation.cpp).
  /// Otherwise atomics take plain pointers cast to int / uint / float.
  bool atomicTypes;
  /// Function constant <i> reads as prefix + i + suffix.
  const char *functionConstantPrefix;
  const char *functionConstantSuffix;
  /// Function constants are declared with Metal's [[function_constant(i)]];
  /// otherwise the runtime defines ENIGMA_FC_<i> and the file checks it did.
  bool functionConstantAttribute;
  /// Math calls take the function table's CUDA name where it has one
  /// (enigma_abs: the prelude's abs that never overflows).
  bool cudaFunctionNames;
  /// Wraps 16-bit sums and products computed in 32 bits, or null. CUDA:
  /// NVRTC's neg.s16 sign-extends wrongly on sm_90
  /// (docs/design/integer-emission.md).
  const char *opaque16;
  /// Appended to the arguments of simd / quad calls: CUDA's warp emulation
  /// takes the mask of the lanes that exist.
  const char *simdArguments;
  /// `#pragma unroll` before a fragment's element loop (Metal and NVRTC
  /// know it; host C++ compilers do not).
  bool unrollPragma;
  /// How vector.load / vector.store access scalar memory
  /// (EmitVectorMemory.cpp).
  enum class VectorAccess {
    AddressSpaceCast, // *(device float4*)(A + i)
    PointerCast,      // *(float4*)(A + i)
    Helpers,          // enigma_vector_load<float4>(A + i) (memcpy)
  } vectorAccess;
};

class CFamilyEmitter {
public:
  CFamilyEmitter(KernelOp kernel, llvm::raw_ostream &os)
      : kernel(kernel), os(os) {}
  virtual ~CFamilyEmitter() = default;

  /// Prints the whole kernel (file header included).
  mlir::LogicalResult emit();

  /// Parameters printed as enigma_param_<index>, to learn which names the
  /// kernel's own text uses (emitAvoidingNameClashes).
  void useParameterPlaceholders() { parameterPlaceholders = true; }
  /// Names no parameter may be printed as, besides the reserved ones.
  void avoidParameterNames(llvm::StringSet<> names) {
    usedNames = std::move(names);
  }

  /// How this target spells what family code prints differently.
  virtual const TargetSpellings &spellings() const = 0;

  // The op families (Families.h) print through the members below.
  std::string typeName(mlir::Type type, bool asSigned = false);
  mlir::LogicalResult emitBlock(mlir::Block &block);
  mlir::LogicalResult emitOp(mlir::Operation *op);
  virtual std::string expr(mlir::Value value);
  void alias(mlir::Value value, std::string expression);
  std::string freshName(mlir::Value value);
  virtual void define(mlir::Value value, const std::string &rhs);
  virtual void assign(mlir::Value target, const std::string &rhs);
  virtual void declareVariable(mlir::Value value, const std::string &init);
  llvm::raw_ostream &line(); // indented output
  void indentMore() { indent += 2; }
  void indentLess() { indent -= 2; }
  KernelOp getKernel() { return kernel; }
  /// How this target spells a thread query op (also a detached one).
  std::string queryExpr(mlir::Operation *query) { return threadQuery(query); }
  llvm::raw_ostream &stream() { return os; }

protected:
  // --- Target hooks -------------------------------------------------------
  virtual void emitFileHeader() = 0;
  /// Prints the kernel's signature and opening brace, then whatever must run
  /// before the body (parameter unpacking, guards).
  virtual mlir::LogicalResult emitKernelBody() = 0;
  /// Expression for a thread/grid query op.
  virtual std::string threadQuery(mlir::Operation *op) = 0;
  /// Statement(s) for a barrier; may fail on targets that cannot honour it.
  virtual mlir::LogicalResult emitBarrier(mlir::Operation *op) = 0;
  /// Ops this target prints in its own way (the CPU's thread loops, async
  /// copies, ...), asked before the op families; sets `handled`.
  virtual mlir::LogicalResult emitTargetOp(mlir::Operation *op,
                                           bool &handled) {
    handled = false;
    return mlir::success();
  }

public:
  /// CUDA: the arguments a tile copy (enigma.copy_tile_async) issued
  /// through the TMA takes before and after the usual ones
  /// (enigma_copy_tile_tma); then the kernel also tracks its commit groups
  /// in `enigma_tma` (enigma_cuda_tma.cuh).
  struct TmaCopyArgs {
    std::string leading, trailing;
  };
  virtual std::optional<TmaCopyArgs> tmaCopyArgs(mlir::Operation *copy) {
    return std::nullopt;
  }
  virtual bool hasTensorMaps() { return false; }

protected:

  // --- Shared pieces the targets build on -----------------------------------
  /// The element type spelling of a buffer parameter, from its enigma.dtype
  /// (which keeps signedness), e.g. "int" for an i32 buffer of dtype i32.
  std::string paramElementType(unsigned index);
  /// A C identifier for parameter `index` derived from the user's name.
  std::string paramName(unsigned index);
  /// How the body reads scalar parameter `index` declared as `name`: signed
  /// integers are read through their unsigned storage type.
  std::string scalarParamExpr(unsigned index, const std::string &name);

  KernelOp kernel;
  llvm::raw_ostream &os;
  bool parameterPlaceholders = false;
  llvm::StringSet<> usedNames;
  int indent = 0;
  llvm::DenseMap<mlir::Value, std::string> names;
  unsigned nextId = 0;

  /// `if (c) { ... } else { ... }`: each arm's body printed by `arm`, then
  /// its yielded values given to `assign` with the if's results.
  mlir::LogicalResult
  emitIfArms(mlir::scf::IfOp op,
             llvm::function_ref<mlir::LogicalResult(mlir::Block &)> arm,
             llvm::function_ref<void(mlir::ValueRange, mlir::ValueRange)>
                 assign);

private:
  std::string constant(mlir::Attribute value, mlir::Type type);
  mlir::LogicalResult emitFor(mlir::scf::ForOp op);
  mlir::LogicalResult emitIf(mlir::scf::IfOp op);
  mlir::LogicalResult emitGuardChain(llvm::ArrayRef<mlir::scf::IfOp> chain);
  void emitYield(mlir::ValueRange targets, mlir::ValueRange values);
};

/// Prints `kernel` with an emitter of type E (constructed from the kernel
/// and a stream) so that no parameter shadows a name the kernel's text uses:
/// a first pass with placeholder parameter names collects the identifiers
/// of the kernel function (the target's functions, types and constants it
/// calls), the second prints the parameters with names that avoid them
/// (ReservedNames.h). The first pass reports the diagnostics.
template <class E>
mlir::LogicalResult emitAvoidingNameClashes(KernelOp kernel,
                                            llvm::raw_ostream &os) {
  std::string probe;
  llvm::raw_string_ostream probeStream(probe);
  E first(kernel, probeStream);
  first.useParameterPlaceholders();
  if (mlir::failed(first.emit()))
    return mlir::failure();
  llvm::StringSet<> used =
      identifiersOfKernelFunction(probe, kernelFunctionName(kernel));
  mlir::ScopedDiagnosticHandler reported(
      kernel.getContext(), [](mlir::Diagnostic &) { return mlir::success(); });
  E second(kernel, os);
  second.avoidParameterNames(std::move(used));
  return second.emit();
}

/// The name C code uses for a mem_flags attribute, e.g.
/// "mem_flags::mem_device | mem_flags::mem_threadgroup".
std::string metalMemFlags(MemFlags flags);

/// True when the op (or anything nested in it) is a barrier.
bool containsBarrier(mlir::Operation *op);

} // namespace enigma

#endif
