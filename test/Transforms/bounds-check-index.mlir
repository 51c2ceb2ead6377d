// RUN: enigma-opt %s --enigma-bounds-check | FileCheck %s
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-msl | FileCheck %s --check-prefix=MSL
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-msl -o %t.metal && %check_msl %t.metal
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-cpp -o %t.cpp && %host_cxx_syntax %t.cpp

// An access A[y, x] to a buffer declared with a shape: each index is
// checked against its extent (enigma.index_check, 64-bit operands), the
// failing branch records the index and the extent (words 8 and 9) with
// the first violation; the flat access keeps its own check.

// CHECK-LABEL: enigma.kernel @shaped(
// CHECK-SAME: {access = "load", buffer = "A"
// CHECK-SAME: {access = "index", buffer = "A", dim = 1 : i32, extent = 1 : i32, extent_name = "W", location = "k.py:4", param = -1 : i32, shape = "[H, W]", size = 0 : i64}
// CHECK: %[[BAD:.*]] = arith.cmpi uge, %[[X:.*]], %[[W:.*]] : i64
// CHECK: scf.if %[[BAD]] {
// CHECK:   enigma.atomic_rmw or %enigma_bounds_record
// CHECK:   scf.if
// CHECK:     memref.store %{{.*}}, %enigma_bounds_record[%c2]
// CHECK:     memref.store %{{.*}}, %enigma_bounds_record[%c3]
// CHECK:     %[[LOW:.*]] = arith.trunci %[[W]] : i64 to i32
// CHECK:     memref.store %[[LOW]], %enigma_bounds_record[%c8]
// CHECK:     memref.store %{{.*}}, %enigma_bounds_record[%c9]
// CHECK:   }
// CHECK: }
// CHECK-NOT: enigma.index_check
// CHECK: memref.load %A

// MSL-LABEL: kernel void enigma_kernel_shaped(
// MSL: ulong [[X:v[0-9]+]] = (ulong)thread_position_in_grid.x;
// MSL-NEXT: ulong [[W:v[0-9]+]] = (ulong)W;
// MSL-NEXT: bool [[BAD:v[0-9]+]] = [[X]] >= [[W]];
// MSL-NEXT: if ([[BAD]]) {
// MSL: uint [[LOW:v[0-9]+]] = (uint)[[W]];
// MSL-NEXT: enigma_view_{{[0-9]+}}[8ul] = [[LOW]];
// MSL: enigma_view_{{[0-9]+}}[9ul] = {{v[0-9]+}};
enigma.kernel @shaped(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %W: i32 {enigma.name = "W", enigma.dtype = "u32"},
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"}) {
  %x = enigma.thread_position_in_grid <x> loc("k.py":3:0)
  %y = enigma.thread_position_in_grid <y> loc("k.py":3:0)
  %x64 = arith.extui %x : i32 to i64 loc("k.py":4:0)
  %w64 = arith.extui %W : i32 to i64 loc("k.py":4:0)
  enigma.index_check %x64 below %w64 {dim = 1 : i32, buffer = "A", shape = "[H, W]", extent_name = "W"} : i64, i64 loc("k.py":4:0)
  %row = arith.muli %y, %W : i32 loc("k.py":4:0)
  %flat = arith.addi %row, %x : i32 loc("k.py":4:0)
  %i = arith.index_castui %flat : i32 to index loc("k.py":4:0)
  %v = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>> loc("k.py":4:0)
  %j = arith.index_castui %x : i32 to index
  memref.store %v, %B[%j] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
