//===- EnigmaKernelOps.td - Kernel definition ops ----------*- tablegen -*-===//
#ifndef ENIGMA_KERNEL_OPS_TD
#define ENIGMA_KERNEL_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Enigma_KernelOp : Enigma_Op<"kernel", [
    FunctionOpInterface, IsolatedFromAbove, Symbol, OpAsmOpInterface,
    AutomaticAllocationScope
  ]> {
  let summary = "A Metal compute kernel";
  let description = [{
    One compute kernel. Each argument is either a buffer (a rank-1 dynamic
    memref in the `device` or `constant` address space, bound at
    `[[buffer(i)]]` in argument order) or a scalar passed by value. The
    argument attribute `enigma.name` keeps the user's parameter name and
    `enigma.dtype` the element type with its signedness (MLIR integers are
    signless). An integer scalar may carry `enigma.multiple_of = N`: a
    promise, checked by the runtime at dispatch, that its value is a
    multiple of N, which lets offsets built from it prove alignment.

    `enigma.threadgroup_size = N` on the kernel says that it runs only in
    threadgroups of exactly N threads, every threadgroup of a launch full
    (the runtime refuses other launches). Targets may then use N as a
    constant: CUDA as `__launch_bounds__(N)`, Metal as
    `[[max_total_threads_per_threadgroup(N)]]`.

    `enigma.matrix_extents` lists buffers that the kernel reads or writes
    as row-major matrices whose sides come from scalar parameters, so that
    the runtime refuses a launch whose buffer is too small instead of
    running past its end. Each entry is a dictionary: `buffer` (the buffer
    argument's index), the sides `rows`, `cols` and `pitch`, each either a
    constant (`rows = 64`) or the index of an integer scalar argument
    (`rows_param = 3`), optionally divided (rounding up) and scaled
    (`rows_divisor = 64, rows_scale = 2`: `ceil(rows / 64) * 2`, for sides
    counted in blocks or multiples), and `what` (the message's words). The
    buffer needs `(rows - 1) * pitch + cols` elements when both sides are
    non-zero.

    ```mlir
    enigma.kernel @vector_add(%A: memref<?xf32, #enigma.address_space<device>>) {
      enigma.return
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name,
                       TypeAttrOf<FunctionType>:$function_type,
                       OptionalAttr<DictArrayAttr>:$arg_attrs,
                       OptionalAttr<DictArrayAttr>:$res_attrs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::FunctionType":$type)>
  ];
  let extraClassDeclaration = [{
    // FunctionOpInterface
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    // OpAsmOpInterface: name block arguments after the user's parameters.
    void getAsmBlockArgumentNames(::mlir::Region &region,
                                  ::mlir::OpAsmSetValueNameFn setNameFn);
    /// The user's name of argument `i` (enigma.name), or "arg<i>".
    std::string getParamName(unsigned i);
    /// True when argument `i` is a buffer (memref) rather than a scalar.
    bool isBufferParam(unsigned i);
    /// The multiple the value of scalar argument `i` is promised to be
    /// (enigma.multiple_of); 1 when it promises nothing.
    uint64_t getParamMultipleOf(unsigned i);
    /// The argument attribute holding that promise.
    static constexpr ::llvm::StringLiteral kMultipleOfAttr =
        "enigma.multiple_of";
    /// The threadgroup size the kernel requires (enigma.threadgroup_size),
    /// if it requires one.
    std::optional<uint64_t> getRequiredThreadgroupSize();
    static constexpr ::llvm::StringLiteral kThreadgroupSizeAttr =
        "enigma.threadgroup_size";
    /// Checks enigma.matrix_extents (part of the verifier).
    ::mlir::LogicalResult verifyMatrixExtents();
    /// The buffers read as matrices (enigma.matrix_extents), in order.
    std::vector<::enigma::MatrixExtent> getMatrixExtents();
    static constexpr ::llvm::StringLiteral kMatrixExtentsAttr =
        "enigma.matrix_extents";
  }];
}

def Enigma_ReturnOp : Enigma_Op<"return", [
    Pure, HasParent<"KernelOp">, ReturnLike, Terminator
  ]> {
  let summary = "Ends a kernel";
  let assemblyFormat = "attr-dict";
}

#endif
