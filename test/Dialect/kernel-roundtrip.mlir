// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --mlir-print-op-generic | enigma-opt | FileCheck %s

// Every kind of parameter: device and constant buffers of each element type
// class (float, integer, bool, vector) and scalars; the argument attributes
// survive and name the block arguments.

// CHECK-LABEL: enigma.kernel @params(
// CHECK-SAME: %A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"}
// CHECK-SAME: %H: memref<?xf16, #enigma.address_space<constant>> {enigma.dtype = "f16", enigma.name = "H"}
// CHECK-SAME: %BF: memref<?xbf16, #enigma.address_space<device>> {enigma.dtype = "bf16", enigma.name = "BF"}
// CHECK-SAME: %I8: memref<?xi8, #enigma.address_space<device>> {enigma.dtype = "i8", enigma.name = "I8"}
// CHECK-SAME: %U16: memref<?xi16, #enigma.address_space<constant>> {enigma.dtype = "u16", enigma.name = "U16"}
// CHECK-SAME: %U64: memref<?xi64, #enigma.address_space<device>> {enigma.dtype = "u64", enigma.name = "U64"}
// CHECK-SAME: %M: memref<?xi1, #enigma.address_space<device>> {enigma.dtype = "b1", enigma.name = "M"}
// CHECK-SAME: %V: memref<?xvector<4xf32>, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "V"}
// CHECK-SAME: %n: i32 {enigma.dtype = "i32", enigma.name = "n"}
// CHECK-SAME: %s: f16 {enigma.dtype = "f16", enigma.name = "s"}
// CHECK-SAME: %b: i1 {enigma.dtype = "b1", enigma.name = "b"}
// CHECK-SAME: %{{[a-z0-9]+}}: vector<2xi32>)
// CHECK-NEXT: enigma.return
enigma.kernel @params(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %H: memref<?xf16, #enigma.address_space<constant>> {enigma.name = "H", enigma.dtype = "f16"},
    %BF: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "BF", enigma.dtype = "bf16"},
    %I8: memref<?xi8, #enigma.address_space<device>> {enigma.name = "I8", enigma.dtype = "i8"},
    %U16: memref<?xi16, #enigma.address_space<constant>> {enigma.name = "U16", enigma.dtype = "u16"},
    %U64: memref<?xi64, #enigma.address_space<device>> {enigma.name = "U64", enigma.dtype = "u64"},
    %M: memref<?xi1, #enigma.address_space<device>> {enigma.name = "M", enigma.dtype = "b1"},
    %V: memref<?xvector<4xf32>, #enigma.address_space<device>> {enigma.name = "V", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "i32"},
    %s: f16 {enigma.name = "s", enigma.dtype = "f16"},
    %b: i1 {enigma.name = "b", enigma.dtype = "b1"},
    %unnamed: vector<2xi32>) {
  enigma.return
}

// A memref without a memory space is a device buffer.
// CHECK-LABEL: enigma.kernel @default_space(
// CHECK-SAME: %arg0: memref<?xi32>)
enigma.kernel @default_space(%x: memref<?xi32>) {
  enigma.return
}

// CHECK-LABEL: enigma.kernel @empty()
// CHECK-NEXT: enigma.return
enigma.kernel @empty() {
  enigma.return
}

// The body uses parameters through memref and arith ops.
// CHECK-LABEL: enigma.kernel @body(
// CHECK: %[[TID:.*]] = enigma.thread_position_in_grid <x>
// CHECK: %[[I:.*]] = arith.index_castui %[[TID]] : i32 to index
// CHECK: %[[V:.*]] = memref.load %in[%[[I]]] : memref<?xf32, #enigma.address_space<constant>>
// CHECK: %[[W:.*]] = arith.mulf %[[V]], %scale : f32
// CHECK: memref.store %[[W]], %out[%[[I]]] : memref<?xf32, #enigma.address_space<device>>
// CHECK: enigma.return
enigma.kernel @body(
    %in: memref<?xf32, #enigma.address_space<constant>> {enigma.name = "in", enigma.dtype = "f32"},
    %out: memref<?xf32, #enigma.address_space<device>> {enigma.name = "out", enigma.dtype = "f32"},
    %scale: f32 {enigma.name = "scale", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %v = memref.load %in[%i] : memref<?xf32, #enigma.address_space<constant>>
  %w = arith.mulf %v, %scale : f32
  memref.store %w, %out[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// Matrices the runtime checks before a launch: sides from scalar
// arguments or constants.
// CHECK-LABEL: enigma.kernel @matrix_extents(
// CHECK: enigma.matrix_extents = [{buffer = 0 : i64, cols_param = 2 : i64, pitch = 64 : i64, rows_param = 1 : i64, what = "reads A"}]
enigma.kernel @matrix_extents(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %k: i32 {enigma.name = "k", enigma.dtype = "u32"}) attributes {
      enigma.matrix_extents = [{buffer = 0 : i64, rows_param = 1 : i64,
                                cols_param = 2 : i64, pitch = 64 : i64,
                                what = "reads A"}]} {
  enigma.return
}

// A side counted in blocks: ceil(m / 64) rows, each 3 x 4096 elements.
// CHECK-LABEL: enigma.kernel @matrix_extents_in_blocks(
// CHECK: enigma.matrix_extents = [{buffer = 0 : i64, cols = 4096 : i64, pitch_param = 2 : i64, pitch_scale = 3 : i64, rows_divisor = 64 : i64, rows_param = 1 : i64, what = "sums in W"}]
enigma.kernel @matrix_extents_in_blocks(
    %W: memref<?xf32, #enigma.address_space<device>> {enigma.name = "W", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {
      enigma.matrix_extents = [{buffer = 0 : i64, rows_param = 1 : i64,
                                rows_divisor = 64 : i64, cols = 4096 : i64,
                                pitch_param = 2 : i64, pitch_scale = 3 : i64,
                                what = "sums in W"}]} {
  enigma.return
}
