//===- EnigmaAttributes.td - Enums and attributes ----------*- tablegen -*-===//
#ifndef ENIGMA_ATTRIBUTES_TD
#define ENIGMA_ATTRIBUTES_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/IR/EnumAttr.td"

// Metal address spaces. Buffers are memrefs whose memory space is one of
// these; the emitters print the matching qualifier.
def Enigma_AddressSpace : I32EnumAttr<"AddressSpace", "Metal address space", [
    I32EnumAttrCase<"Device", 1, "device">,
    I32EnumAttrCase<"Constant", 2, "constant">,
    I32EnumAttrCase<"Threadgroup", 3, "threadgroup">,
    I32EnumAttrCase<"Thread", 4, "thread">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::enigma";
}
def Enigma_AddressSpaceAttr
    : EnumAttr<Enigma_Dialect, Enigma_AddressSpace, "address_space"> {
  let assemblyFormat = "`<` $value `>`";
}

def Enigma_Dim : I32EnumAttr<"Dim", "grid dimension", [
    I32EnumAttrCase<"X", 0, "x">,
    I32EnumAttrCase<"Y", 1, "y">,
    I32EnumAttrCase<"Z", 2, "z">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::enigma";
}
def Enigma_DimAttr : EnumAttr<Enigma_Dialect, Enigma_Dim, "dim"> {
  let assemblyFormat = "`<` $value `>`";
}

// Memory ordering flags of threadgroup_barrier / simdgroup_barrier.
def Enigma_MemFlags : I32BitEnumAttr<"MemFlags", "Metal mem_flags", [
    I32BitEnumAttrCaseNone<"None", "none">,
    I32BitEnumAttrCaseBit<"Device", 0, "device">,
    I32BitEnumAttrCaseBit<"Threadgroup", 1, "threadgroup">,
    I32BitEnumAttrCaseBit<"Texture", 2, "texture">
  ]> {
  let genSpecializedAttr = 0;
  let cppNamespace = "::enigma";
  let separator = " | ";
}
def Enigma_MemFlagsAttr : EnumAttr<Enigma_Dialect, Enigma_MemFlags, "mem_flags"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif
