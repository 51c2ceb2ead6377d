// RUN: enigma-opt %s | enigma-opt | FileCheck %s

// The turns of consumer warpgroups print and parse back: a turn without
// values to wait for, and one that waits for a fragment and a scalar.

// CHECK-LABEL: enigma.kernel @turns
// CHECK: } consumer {
// CHECK: enigma.consumer_turn_begin{{$}}
// CHECK-NEXT: enigma.consumer_turn_end
// CHECK: %[[R:.*]] = enigma.mma_fill
// CHECK-NEXT: enigma.consumer_turn_begin after(%[[R]], %{{.*}} : tensor<16xf32>, f32)
// CHECK-NEXT: enigma.consumer_turn_end
enigma.kernel @turns(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.consumer_turn_begin
    enigma.consumer_turn_end
    %r = enigma.mma_fill %f : f32 -> tensor<16xf32>
    enigma.consumer_turn_begin after(%r, %f : tensor<16xf32>, f32)
    enigma.consumer_turn_end
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}
