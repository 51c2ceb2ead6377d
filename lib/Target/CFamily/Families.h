//===- Families.h - Op families printed outside the core walker -*- C++ -*-===//
//
// CFamilyEmitter::emitOp prints the core ops itself and hands every other op
// to these functions in turn; each family lives in its own file and sets
// `handled` when the op is one of its own.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_TARGET_CFAMILY_FAMILIES_H
#define ENIGMA_LIB_TARGET_CFAMILY_FAMILIES_H

#include "CFamilyEmitter.h"

namespace enigma {

/// Upstream arith ops other than constants: integer and float arithmetic,
/// comparisons and selection, conversions (EmitArith.cpp).
mlir::LogicalResult emitArithFamily(CFamilyEmitter &e, mlir::Operation *op,
                                    bool &handled);
/// The math family's table functions: math, integer, bit, geometry and
/// packing ops and the upstream math ops, as Metal calls (EmitMath.cpp).
mlir::LogicalResult emitMathFamily(CFamilyEmitter &e, mlir::Operation *op,
                                   bool &handled);
/// The name the math family's table gives op `opName` on this target, e.g.
/// "enigma_abs" for math.absi on CUDA (EmitMath.cpp).
llvm::StringRef mathFunctionName(CFamilyEmitter &e, llvm::StringRef opName);
/// Vector construction, lane access and shuffles (EmitVectors.cpp).
mlir::LogicalResult emitVectorFamily(CFamilyEmitter &e, mlir::Operation *op,
                                     bool &handled);
/// Threadgroup memory, atomics, function constants, matrix types
/// (EmitCooperation.cpp).
mlir::LogicalResult emitCooperationFamily(CFamilyEmitter &e,
                                          mlir::Operation *op, bool &handled);
/// Simdgroup and quad operations, simdgroup matrices (EmitSimd.cpp).
mlir::LogicalResult emitSimdFamily(CFamilyEmitter &e, mlir::Operation *op,
                                   bool &handled);
/// Vector loads and stores of scalar memory (EmitVectorMemory.cpp).
mlir::LogicalResult emitVectorMemoryFamily(CFamilyEmitter &e,
                                           mlir::Operation *op, bool &handled);
/// Control flow beyond scf.for / scf.if, e.g. scf.while (EmitControl.cpp).
mlir::LogicalResult emitControlFamily(CFamilyEmitter &e, mlir::Operation *op,
                                      bool &handled);

/// Simdgroup async copies and their wait are printed by each target's
/// emitTargetOp; EmitAsyncCopy.cpp has what they share.
/// Whether the kernel has async copies or waits.
bool usesAsyncCopy(KernelOp kernel);
/// `(memref + offset)` as a pointer (through the atomic view's `p` where
/// memory has Metal's atomic type).
std::string asyncCopyPointer(CFamilyEmitter &e, mlir::Value memref,
                             mlir::Value offset);
/// CUDA and host C++: the prelude's call `fn(first dst, [dst per row,] src,
/// count | src per row, cols, rows, sizeof(T), last)` for async copy `op`.
std::string asyncCopyPreludeCall(CFamilyEmitter &e, mlir::Operation *op,
                                 llvm::StringRef fn, llvm::StringRef first,
                                 llvm::StringRef last);

/// Fragments, products and tile copies (EmitMma.cpp); also element-wise
/// arith / math on fragments, so it runs before the core arith printer.
mlir::LogicalResult emitMmaFamily(CFamilyEmitter &e, mlir::Operation *op,
                                  bool &handled);
/// enigma_frag<T, M, N> / enigma_row<T, M> for a fragment / row vector.
std::string fragmentTypeName(CFamilyEmitter &e, mlir::RankedTensorType type);
/// Whether the kernel has ops of the mma family or fragment values.
bool usesMma(KernelOp kernel);
/// MSL (MSLEmitter prints it): the helper templates of the mma family, at
/// file scope.
void emitMmaDeclarations(CFamilyEmitter &e);
/// MSL: the Metal attributes (name, is uint3) the mma helpers read.
std::vector<std::pair<llvm::StringRef, bool>> mmaMetalQueries(KernelOp kernel);

/// MSL (MSLEmitter prints it): the helpers that define what Metal leaves
/// undefined, which the CPU and CUDA preludes include: integer division
/// (metal_total_division.h) when the kernel divides integers, float ->
/// integer conversion (metal_float_to_int.h) when it converts floats.
void emitTotalOperationDeclarations(CFamilyEmitter &e);

/// Declarations that must precede the kernel function (Metal function
/// constants, helper types); printed by every target before the signature.
void emitFileScopeDeclarations(CFamilyEmitter &e);

} // namespace enigma

#endif
