// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Vector construction, lanes, shuffles, reductions and constants print with
// Metal's spelling in every target: float4(a, b, c, d), float4(x), v.x.

// CHECK-LABEL: enigma_kernel_lanes(
// CHECK: float4 [[V:v[0-9]+]] = float4(x, y, 1.0f, x);
// CHECK-NEXT: float4 [[B:v[0-9]+]] = float4(y);
// CHECK-NEXT: float [[E:v[0-9]+]] = [[V]].z;
// CHECK-NEXT: float3 [[S:v[0-9]+]] = float3([[V]].y, [[V]].z, [[B]].x);
// CHECK-NEXT: float [[D:v[0-9]+]] = (float)([[V]].x + [[V]].y + [[V]].z + [[V]].w);
// CHECK-NEXT: float4 {{v[0-9]+}} = [[V]] * float4(1.0f, 2.0f, 3.0f, 4.0f);
// CHECK-NEXT: bool4 {{v[0-9]+}} = [[V]] < [[B]];
// CHECK-NEXT: uint4 [[U:v[0-9]+]] = (uint4)enigma_float_to_int<uint, uint4>([[V]]);
// CHECK-NEXT: uint4 [[SH:v[0-9]+]] = [[U]] << uint4(0u, 8u, 16u, 24u);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)([[SH]].x | [[SH]].y | [[SH]].z | [[SH]].w);
enigma.kernel @lanes(%x: f32 {enigma.name = "x"}, %y: f32 {enigma.name = "y"}, %o: memref<?xvector<4xf32>> {enigma.name = "o", enigma.dtype = "f32"}, %p: memref<?xf32> {enigma.name = "p"}, %q: memref<?xi32> {enigma.name = "q"}) {
  %one = arith.constant 1.0 : f32
  %v = vector.from_elements %x, %y, %one, %x : vector<4xf32>
  %b = vector.broadcast %y : f32 to vector<4xf32>
  %e = vector.extract %v[2] : f32 from vector<4xf32>
  %s = vector.shuffle %v, %b [1, 2, 4] : vector<4xf32>, vector<4xf32>
  %d = vector.reduction <add>, %v : vector<4xf32> into f32
  %k = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : vector<4xf32>
  %m = arith.mulf %v, %k : vector<4xf32>
  %lt = arith.cmpf olt, %v, %b : vector<4xf32>
  %u = arith.fptoui %v : vector<4xf32> to vector<4xi32>
  %shifts = arith.constant dense<[0, 8, 16, 24]> : vector<4xi32>
  %sh = arith.shli %u, %shifts : vector<4xi32>
  %or = vector.reduction <or>, %sh : vector<4xi32> into i32
  %c0 = arith.constant 0 : index
  memref.store %m, %o[%c0] : memref<?xvector<4xf32>>
  %c1 = arith.constant 1 : index
  %s0 = vector.extract %s[0] : f32 from vector<3xf32>
  %sum = arith.addf %s0, %d : f32
  %sum2 = arith.addf %sum, %e : f32
  memref.store %sum2, %p[%c0] : memref<?xf32>
  memref.store %or, %q[%c0] : memref<?xi32>
  %lt0 = vector.extract %lt[1] : i1 from vector<4xi1>
  %lti = arith.extui %lt0 : i1 to i32
  memref.store %lti, %q[%c1] : memref<?xi32>
  enigma.return
}

// A buffer of vectors is a pointer to the vector type.
// CHECK-LABEL: enigma_kernel_vector_buffer(
// CHECK: half4 [[L:v[0-9]+]] = a[
// CHECK-NEXT: half4 {{v[0-9]+}} = [[L]] + half4(half(1.0f));
enigma.kernel @vector_buffer(%a: memref<?xvector<4xf16>> {enigma.name = "a", enigma.dtype = "f16"}) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<?xvector<4xf16>>
  %one = arith.constant dense<1.0> : vector<4xf16>
  %w = arith.addf %v, %one : vector<4xf16>
  memref.store %w, %a[%c0] : memref<?xvector<4xf16>>
  enigma.return
}

// dot prints as Metal's dot on every target (the semantics library defines
// it for host C++ and CUDA), not as its expansion into lanes.
// CHECK-LABEL: enigma_kernel_dot(
// CHECK: float [[D:v[0-9]+]] = dot({{v[0-9]+}}, {{v[0-9]+}});
// CHECK-NOT: .z
// CHECK: A[0ul] = [[D]];
enigma.kernel @dot(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %x = memref.load %A[%c0] : memref<?xf32, #enigma.address_space<device>>
  %y = memref.load %A[%c1] : memref<?xf32, #enigma.address_space<device>>
  %v = vector.from_elements %x, %y, %x : vector<3xf32>
  %d = enigma.dot %v, %v : vector<3xf32>
  memref.store %d, %A[%c0] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
