// RUN: enigma-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// enigma.index_check: one index of a shaped buffer access against its
// extent (bounds-checked mode); it survives a round trip and is not folded
// away.

// CHECK-LABEL: enigma.kernel @roundtrip(
// CHECK: enigma.index_check %{{.*}} below %{{.*}} {buffer = "A", dim = 0 : i32, extent_name = "H", shape = "[H, 4]"} : i64, i64
enigma.kernel @roundtrip(%H: i64 {enigma.name = "H", enigma.dtype = "u64"}) {
  %c3 = arith.constant 3 : i64
  enigma.index_check %c3 below %H {dim = 0 : i32, buffer = "A", shape = "[H, 4]", extent_name = "H"} : i64, i64
  enigma.return
}

// -----

enigma.kernel @negative_dimension(%H: i64 {enigma.name = "H", enigma.dtype = "u64"}) {
  %c3 = arith.constant 3 : i64
  // expected-error @+1 {{'enigma.index_check' op needs a dimension >= 0, got -1}}
  enigma.index_check %c3 below %H {dim = -1 : i32, buffer = "A", shape = "[H]", extent_name = "H"} : i64, i64
  enigma.return
}
